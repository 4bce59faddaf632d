// Two pinto-node agents in the mesh with nodeMeshPassword: the keyed session comes up; a key file changed
// on one side only resets the session and it stays down (the connect times out, keyed) until the other
// side has the same key. Each agent reads its own PINTO_SECRETS_DIR, as each node mounts its Secret.

import t from 'tap'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTopology } from '../harness/netns.js'
import { waitFor } from '../harness/wait.js'
import { openDatastore } from '../../config/datastore-open.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'
import { startAgent, type AgentProcess } from './agent-process.js'

interface PeerRow { name: string; state: string; lastError: string | null; transport: { tcpMd5: boolean; ttlSecurity: number } }

async function peer(a: AgentProcess, name: string): Promise<PeerRow | undefined> {
  const r = await a.get('/v1/peers')
  return (r.body as { peers: PeerRow[] }).peers.find((p) => p.name === name)
}

t.test('nodeMeshPassword keys the mesh; a key changed on one side keeps the session down until both match', async (t) => {
  const topo = await createTopology(t)
  const n1 = await topo.addNode({ name: 'm1', v4: '192.0.2.31/24' })
  const n2 = await topo.addNode({ name: 'm2', v4: '192.0.2.32/24' })
  const dir = await mkdtemp(join(tmpdir(), 'pinto-mesh-md5-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const keyFile = (n: string): string => join(dir, `secrets-${n}`, 'bgp-secrets', 'mesh')
  for (const n of ['m1', 'm2']) {
    await mkdir(join(dir, `secrets-${n}`, 'bgp-secrets'), { recursive: true })
    await writeFile(keyFile(n), 'mesh-key-1')
  }
  const store = await openDatastore(join(dir, 'store'))
  await store.create(
    resourceKey('BGPConfiguration', 'default'),
    encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { nodeToNodeMeshEnabled: true, nodeMeshPassword: { secretKeyRef: { name: 'bgp-secrets', key: 'mesh' } } } } as never),
  )
  await store.close()
  const agent = (n: string, ip: string): AgentProcess =>
    startAgent(t, topo.node(n).ns, { PINTO_NODENAME: n, PINTO_IP: `${ip}/24`, PINTO_DATASTORE: join(dir, 'store'), PINTO_SECRETS_DIR: join(dir, `secrets-${n}`), PINTO_IPAM_REPAIR_SECONDS: '0' })
  const a1 = agent('m1', n1.v4!)
  const a2 = agent('m2', n2.v4!)
  await a1.ready()
  await a2.ready()
  const state = async (a: AgentProcess, name: string): Promise<string | undefined> => (await peer(a, name))?.state

  await waitFor(async () => (await state(a1, 'mesh-m2')) === 'Established' && (await state(a2, 'mesh-m1')) === 'Established', { timeoutMs: 30_000, what: 'the keyed mesh session' })
  t.same((await peer(a2, 'mesh-m1'))?.transport, { tcpMd5: true, ttlSecurity: 0 }, 'keyed')

  await writeFile(keyFile('m2'), 'mesh-key-2')
  // m2 (the higher address) connects: with its new key nothing answers.
  const down = await waitFor(async () => {
    const p = await peer(a2, 'mesh-m1')
    return p !== undefined && /timed out; TCP-MD5 keyed/.test(p.lastError ?? '') ? p : undefined
  }, { timeoutMs: 30_000, what: 'm2 re-keyed and its connect timing out' })
  t.not(down.state, 'Established', 'one side changed: down')
  t.not(await state(a1, 'mesh-m2'), 'Established', 'and m1 sees it down too')

  await writeFile(keyFile('m1'), 'mesh-key-2')
  await waitFor(async () => (await state(a1, 'mesh-m2')) === 'Established' && (await state(a2, 'mesh-m1')) === 'Established', { timeoutMs: 30_000, what: 'the mesh back with the same key on both' })
  t.pass('both sides on the new key: Established again')
})
