// End-to-end test plumbing: a DemoCluster (real pinto-node processes in namespaces, pods by the real CNI
// plugin) removed by t.teardown even when the test fails, plus small probes on a node's kernel and API.

import type { Test } from 'tap'
import { execa, type ResultPromise } from 'execa'
import { DemoCluster, type ClusterSpec, type DemoNode } from '../../agent/demo/cluster.js'
import { apiGet, kernelRoutes } from '../../agent/demo/observe.js'
import { waitFor } from '../harness/wait.js'

export async function makeCluster(t: Test, spec: Omit<ClusterSpec, 'say'>): Promise<DemoCluster> {
  const c = DemoCluster.prepare({ ...spec, env: { PINTO_LOG_LEVEL: 'info', ...(spec.env ?? {}) } })
  // Registered before anything exists, so a failure halfway through still removes it.
  t.teardown(() => c.destroy())
  await c.start()
  return c
}

/** The blocks a node owns: felix's blackhole routes in its kernel. */
export async function ownBlocks(n: DemoNode): Promise<string[]> {
  return (await kernelRoutes(n.ns)).filter((r) => r.type === 'blackhole').map((r) => r.prefix).sort()
}

/** Does a node's kernel hold a forwarding pinto route for exactly this prefix? */
export async function hasRoute(n: DemoNode, prefix: string): Promise<boolean> {
  return (await kernelRoutes(n.ns)).some((r) => r.prefix === prefix && r.type === 'unicast')
}

export interface LocRibRow {
  prefix: string
  source: string
  stale: boolean
}

/** GET /v1/routes?table=loc-rib&prefix=… from the node's REST API; undefined when it does not answer. */
export async function locRib(n: DemoNode, prefix: string): Promise<LocRibRow[] | undefined> {
  const body = (await apiGet(n, `/v1/routes?table=loc-rib&prefix=${encodeURIComponent(prefix)}`)) as { routes?: LocRibRow[] } | undefined
  return body?.routes
}

/**
 * `ip monitor route` in a node's namespace, collecting lines until stop(). Started before the event under
 * test so a withdrawal cannot slip by between two polls.
 */
export async function monitorRoutes(t: Test, n: DemoNode): Promise<{ lines: string[]; stop(): Promise<void> }> {
  const lines: string[] = []
  const child: ResultPromise = execa('ip', ['-n', n.ns, 'monitor', 'route'], { reject: false, buffer: false })
  child.stdout?.setEncoding('utf8')
  let partial = ''
  child.stdout?.on('data', (chunk: string) => {
    partial += chunk
    const parts = partial.split('\n')
    partial = parts.pop() ?? ''
    lines.push(...parts)
  })
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM')
    await child
  }
  t.teardown(stop)
  // Ready when it reports a marker route of our own (not pinto's protocol, so felix leaves it alone). The
  // marker is made again until seen: one made before ip monitor has subscribed is never reported.
  const marker = '198.51.100.255'
  const seen = (): boolean => lines.some((l) => l.includes(marker))
  const deadline = Date.now() + 5000
  while (!seen()) {
    await execa('ip', ['-n', n.ns, 'route', 'del', 'blackhole', `${marker}/32`], { reject: false })
    await execa('ip', ['-n', n.ns, 'route', 'add', 'blackhole', `${marker}/32`])
    const ok = await waitFor(seen, { timeoutMs: 250, intervalMs: 10, what: `ip monitor route in ${n.name}` }).then(() => true, () => false)
    if (!ok && Date.now() > deadline) throw new Error(`ip monitor route in ${n.name} reported nothing within 5 s`)
  }
  await execa('ip', ['-n', n.ns, 'route', 'del', 'blackhole', `${marker}/32`])
  return { lines, stop }
}
