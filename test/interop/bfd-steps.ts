// What the BFD interop tests share: pinto-node (kernel dataplane) in a namespace with one BGPPeer to a
// router carrying the pinto.dev/bfd annotation, probes of its API and kernel, and the cut-and-restore step.

import type { Test } from 'tap'
import { join } from 'node:path'
import type { NetNode, Topology } from '../harness/netns.js'
import { cutLink } from '../harness/bfdd.js'
import { waitFor } from '../harness/wait.js'
import { kernelRoutes } from '../../agent/demo/observe.js'
import { startAgent, type AgentProcess } from '../agent/agent-process.js'
import { runPintoctl } from '../agent/pintoctl-run.js'

export const PINTO_AS = 64512

export interface BfdJson { name: string; state: string; remoteState: string; localDiscriminator: number; remoteDiscriminator: number; lastDownDiag: string | null; upTransitions: number; detectTimeMs: number; txIntervalMs: number; packetsReceived: number }
export interface PeerJson { name: string; state: string; since: string; lastError: string | null }

export interface BfdPinto {
  readonly agent: AgentProcess
  bfd(): Promise<BfdJson | undefined>
  peer(): Promise<PeerJson | undefined>
  hasRoute(): Promise<boolean>
  /** BFD Up, BGP Established and the router's route in the kernel. */
  upAgain(what: string): Promise<void>
}

export async function startBfdPinto(t: Test, topo: Topology, np: NetNode, router: NetNode, routerAs: number, route: string): Promise<BfdPinto> {
  const store = join(await topo.tempDir('store'), 'store')
  const resources = [
    { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { asNumber: PINTO_AS, nodeToNodeMeshEnabled: false } },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'BGPPeer',
      metadata: { name: 'tor', annotations: { 'pinto.dev/bfd': 'minTx=100ms,minRx=100ms,multiplier=3' } },
      spec: { peerIP: router.v4!, asNumber: routerAs },
    },
  ]
  const applied = await runPintoctl(['apply', '-f', '-'], { env: { PINTO_DATASTORE: store }, input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: resources }) })
  t.equal(applied.status, 0, `pintoctl apply: ${applied.stderr}`)
  const agent = startAgent(t, np.ns, { PINTO_DATASTORE: store, PINTO_DATAPLANE: 'kernel', PINTO_IP: `${np.v4!}/24`, PINTO_LOG_LEVEL: 'info' })
  await agent.ready()
  const bfd = async (): Promise<BfdJson | undefined> => ((await agent.get('/v1/bfd')).body as { sessions: BfdJson[] }).sessions[0]
  const peer = async (): Promise<PeerJson | undefined> => ((await agent.get('/v1/peers')).body as { peers: PeerJson[] }).peers.find((p) => p.name === 'peer-tor')
  const hasRoute = async (): Promise<boolean> => (await kernelRoutes(np.ns)).some((r) => r.prefix === route && r.type === 'unicast')
  const upAgain = async (what: string): Promise<void> => {
    await waitFor(async () => (await bfd())?.state === 'Up', { timeoutMs: 15_000, what: `${what}: BFD Up` })
    await waitFor(async () => (await peer())?.state === 'Established', { timeoutMs: 30_000, what: `${what}: BGP Established` })
    await waitFor(hasRoute, { timeoutMs: 15_000, what: `${what}: ${route} in pinto's kernel` })
  }
  return { agent, bfd, peer, hasRoute, upAgain }
}

/** Cuts the link silently at the router; BGP and the route must go at BFD speed, and come back after. */
export async function cutAndRestore(t: Test, p: BfdPinto, routerNs: string, pintoAddress: string): Promise<void> {
  const before = (await p.bfd())!.upTransitions
  const cutAt = Date.now()
  await cutLink(routerNs, pintoAddress, true)
  t.teardown(() => cutLink(routerNs, pintoAddress, false))
  // 5 s: an order of magnitude over 300 ms, and far under the hold time the session would need without BFD.
  await waitFor(async () => !(await p.hasRoute()), { timeoutMs: 5000, intervalMs: 5, what: "the router's route leaving pinto's kernel" })
  t.comment(`route gone ${Date.now() - cutAt} ms after the cut (detect time 300 ms)`)
  const down = (await p.bfd())!
  t.equal(down.state, 'Down')
  t.equal(down.lastDownDiag, 'Control Detection Time Expired')
  const peer = (await p.peer())!
  t.not(peer.state, 'Established', 'the BGP session is down')
  t.match(peer.lastError, /BFD/, 'and says BFD took it down')
  await cutLink(routerNs, pintoAddress, false)
  await p.upAgain('link restored')
  t.equal((await p.bfd())!.upTransitions, before + 1, 'BFD came Up once more')
}
