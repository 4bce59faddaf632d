// A real agent's worth of API inputs for tests: two BGP speakers in session over loopback (127.0.0.1 and
// 127.0.0.2) with routes both ways, IPAM on an embedded store in a temp dir, felix's routes as data.
// Everything it starts is stopped and removed by t.teardown, even when the test fails.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Registry } from 'prom-client'
import type { Test } from 'tap'
import { BgpSpeaker, parsePrefix } from '../../../bgp/index.js'
import { openEmbeddedDatastore } from '../../../config/datastore-embedded.js'
import type { Datastore } from '../../../config/datastore.js'
import type { KernelRoute } from '../../../felix/kernel-route.js'
import { Ipam } from '../../../ipam/ipam.js'
import { FibApplyLog, ipamReads, speakerReads, type ApiDeps } from '../../../agent/api/index.js'
import { waitFor } from '../../harness/wait.js'
import { loopbackSpeakers } from '../../bgp/loopback-speakers.js'

export interface Fixture {
  a: BgpSpeaker
  b: BgpSpeaker
  store: Datastore
  storeDir: string
  ipam: Ipam
  fib: KernelRoute[]
  fibLog: FibApplyLog
  deps: ApiDeps
  uptime: { seconds: number | undefined }
}

export const TOKEN = 'test-token-0123456789'

export function kernelRoute(dst: string, gateway?: string): KernelRoute {
  return {
    family: dst.includes(':') ? 6 : 4, table: 254, dst, tos: 0, metric: 0, protocol: 87,
    type: gateway === undefined ? 'blackhole' : 'unicast',
    nexthops: gateway === undefined ? [] : [{ gateway, onlink: true }],
  }
}

export async function fixture(t: Test, over: Partial<ApiDeps> = {}): Promise<Fixture> {
  const { a, b } = await loopbackSpeakers(t)
  a.addPeer({ name: 'node-b', kind: 'mesh', address: '127.0.0.2', port: b.port!, localAddress: '127.0.0.1', peerAsn: 64512, holdTime: 9 })
  b.addPeer({ name: 'node-a', kind: 'mesh', address: '127.0.0.1', port: a.port!, localAddress: '127.0.0.2', peerAsn: 64512, holdTime: 9, passive: true })
  await waitFor(() => a.peerStatus()[0]?.state === 'Established' && b.peerStatus()[0]?.state === 'Established', { timeoutMs: 10_000, what: 'both sessions Established' })
  a.originate(parsePrefix('198.18.0.0/26'))
  a.originate(parsePrefix('198.18.0.64/26'))
  b.originate(parsePrefix('198.18.1.0/26'))
  b.originate(parsePrefix('198.18.1.64/26'))
  b.originate(parsePrefix('198.19.0.0/24'), { localPref: 200 })
  // The same prefix from both sides: on a its own path wins despite b's higher LOCAL_PREF (local-origin
  // comes first, as in BIRD), and a's Loc-RIB says so.
  a.originate(parsePrefix('198.18.9.0/24'), { localPref: 50 })
  b.originate(parsePrefix('198.18.9.0/24'), { localPref: 300 })
  await waitFor(() => a.rib.size === 6 && a.rib.paths(parsePrefix('198.18.9.0/24')).length === 2 && a.peerStatus()[0]!.prefixesAdvertised === 3, { timeoutMs: 5000, what: 'routes exchanged' })

  const storeDir = mkdtempSync(join(tmpdir(), 'pinto-api-'))
  t.teardown(() => rmSync(storeDir, { recursive: true, force: true }))
  const store = await openEmbeddedDatastore(storeDir)
  t.teardown(() => store.close())
  const ipam = new Ipam(store, { pools: [{ name: 'default-ipv4-ippool', cidr: '198.18.0.0/16', blockSize: 26 }] })
  await ipam.autoAssign({ handle: 'k8s-pod-network.c1', node: 'node-a', num4: 1, attrs: { namespace: 'default', pod: 'web-1', node: 'node-a' } })
  await ipam.autoAssign({ handle: 'k8s-pod-network.c2', node: 'node-a', num4: 1, attrs: { namespace: 'default', pod: 'web-2', node: 'node-a' } })
  await ipam.autoAssign({ handle: 'k8s-pod-network.c3', node: 'node-b', num4: 1, attrs: { namespace: 'kube-system', pod: 'dns', node: 'node-b' } })

  const fib = [kernelRoute('198.18.1.0/26', '127.0.0.2'), kernelRoute('198.18.1.64/26', '127.0.0.2'), kernelRoute('198.18.0.0/26'), kernelRoute('198.19.0.0/24', '127.0.0.2')]
  const fibLog = new FibApplyLog()
  fibLog.record({ planned: 4, errors: [], conflicts: [], readMs: 2, writeMs: 3 }, 0.005)
  const uptime: { seconds: number | undefined } = { seconds: undefined }
  const deps: ApiDeps = {
    node: 'node-a',
    uptimeSeconds: () => uptime.seconds ?? a.uptimeSeconds,
    bgp: speakerReads(a),
    ipam: ipamReads(ipam),
    fib: { routes: () => fib, stats: () => fibLog.stats() },
    readiness: { startupWindowSeconds: 30 },
    actions: { refreshPeer: (name, direction) => a.refresh(name, direction) },
    metrics: new Registry(),
    token: TOKEN,
    ...over,
  }
  return { a, b, store, storeDir, ipam, fib, fibLog, deps, uptime }
}
