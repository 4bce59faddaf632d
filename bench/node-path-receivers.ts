// The two receivers bench/node-path compares, each started as its operator starts it, in its own namespace:
// pinto-node as the DaemonSet runs it (bin/pinto-node.js with the V8 flags of its #! line, the kernel
// dataplane, configured through its datastore by pintoctl and its environment), and BIRD 2 with a kernel
// protocol exporting every BGP route to its namespace's main table. Both take one passive iBGP session from
// the bench's sender. Neither is driven through its internals: only the CLI, env, files and sockets.

import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ResultPromise } from 'execa'
import type { NetNode, Topology } from '../test/harness/netns.js'
import { stopPid, waitPidFile } from '../test/harness/pid.js'
import { waitFor } from '../test/harness/wait.js'
import { unixGet } from '../test/agent/agent-process.js'
import { runPintoctl } from '../test/agent/pintoctl/run.js'
import { AGENT_NODE_FLAGS } from '../agent/node-flags.js'

export const RECEIVER_AS = 64512
/** The route protocol number pinto-node tags its kernel routes with (PINTO_ROUTE_PROTOCOL's default). */
export const PINTO_PROTO = 87
/** PINTO_SYNC_DEADLINE_SECONDS's default, which the bench leaves as the DaemonSet does. */
const SYNC_DEADLINE_SECONDS = 10

export interface Receiver {
  readonly name: 'pinto' | 'BIRD'
  readonly pid: number
  /**
   * Resolves once the receiver is past its start-up: pinto-node programs the kernel at once from the
   * first table only after its sync deadline (PINTO_SYNC_DEADLINE_SECONDS, 10 s by default; before it, it
   * waits for every peer's End-of-RIB, as a restarting node must), and then starts its dataplane (devices,
   * NAT rules, the route monitor, the first write); the sender connects once that is done, to a running
   * node, as when a top-of-rack router comes back or a peer is added.
   */
  settled(): Promise<void>
  /** Why it is gone, once it has exited unasked. */
  died(): string | undefined
  stop(): Promise<void>
}

export interface PeerSpec {
  readonly name: string
  readonly address: string
  readonly family: 'ipv4' | 'ipv6'
}

const BIN = fileURLToPath(new URL('../../bin/pinto-node.js', import.meta.url))

export async function startPintoNode(topo: Topology, node: NetNode, peer: PeerSpec, nodeArgs: readonly string[] = []): Promise<Receiver> {
  const dir = await topo.tempDir('pinto')
  const store = join(dir, 'store')
  const resources = [
    { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { asNumber: RECEIVER_AS, nodeToNodeMeshEnabled: false } },
    { apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: peer.name }, spec: { peerIP: peer.address, asNumber: RECEIVER_AS } },
  ]
  const applied = await runPintoctl(['apply', '-f', '-'], { env: { PINTO_DATASTORE: store }, input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: resources }) })
  if (applied.status !== 0) throw new Error(`pintoctl apply: ${applied.stderr}`)
  const apiSocket = join(dir, 'api.sock')
  const env: Record<string, string> = {
    PINTO_NODENAME: 'bench',
    PINTO_DATASTORE: store,
    PINTO_DATAPLANE: 'kernel',
    PINTO_LOG_LEVEL: 'info', // the ConfigMap's default
    PINTO_SOCKET: join(dir, 'pinto.sock'),
    PINTO_API_SOCKET: apiSocket,
    PINTO_API_LISTEN: '127.0.0.1:9099', // the namespace's own loopback
    PINTO_STATE_DIR: dir,
    PINTO_MTU_FILE: join(dir, 'mtu'),
    PINTO_SECRETS_DIR: join(dir, 'secrets'),
    PINTO_IPV4POOL_CIDR: '198.18.0.0/16',
    ...(node.v4 !== undefined ? { PINTO_IP: `${node.v4}/24` } : {}),
    ...(node.v6 !== undefined ? { PINTO_IP6: `${node.v6}/64` } : {}),
  }
  const child: ResultPromise = topo.spawn(node.ns, process.execPath, [...AGENT_NODE_FLAGS, ...nodeArgs, BIN], {
    env,
    stdout: { file: join(dir, 'stdout.log') },
    stderr: { file: join(dir, 'stderr.log') },
    // Removed by the topology (node-path-run's signal handler included). execa's own cleanup would count
    // toward signal-exit's listeners and make it re-raise SIGTERM past that handler.
    cleanup: false,
  })
  const pid = child.pid
  if (pid === undefined) throw new Error('pinto-node: no process')
  let exit: string | undefined
  void child.then((r) => (exit = `pinto-node exited (${r.exitCode ?? r.signal}): ${tail(join(dir, 'stderr.log'))}${tail(join(dir, 'stdout.log'))}`))
  await waitFor(async () => {
    if (exit !== undefined) throw new Error(exit)
    return (await unixGet(apiSocket, '/v1/status')).status === 200
  }, { timeoutMs: 30_000, what: 'pinto-node answering GET /v1/status' }).catch((e: Error) => {
    throw new Error(exit ?? e.message)
  })
  const started = Date.now()
  return {
    name: 'pinto',
    pid,
    // Its log says when the dataplane's start-up after the deadline (devices, NAT, the route monitor, the
    // first write) is done; a few seconds past the deadline do if the wording changes.
    settled: () =>
      waitFor(() => {
        if (exit !== undefined) throw new Error(exit)
        return tail(join(dir, 'stdout.log')).includes('dataplane started') || Date.now() - started > (SYNC_DEADLINE_SECONDS + 5) * 1000
      }, { timeoutMs: (SYNC_DEADLINE_SECONDS + 10) * 1000, intervalMs: 100, what: "pinto-node's start-up sync deadline and dataplane start" }).then(() => undefined),
    died: () => exit,
    async stop() {
      exit ??= 'stopped'
      await stopPid(pid, 10_000)
    },
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-2000)
  } catch {
    return ''
  }
}

/** bird.conf: the session from the sender, and the kernel protocol exporting what BGP learned. */
export function birdConfig(node: NetNode, peer: PeerSpec, dir: string): string {
  const local = peer.family === 'ipv4' ? node.v4 : node.v6
  return [
    `log "${join(dir, 'bird.log')}" { warning, error, fatal };`,
    `router id ${node.v4 ?? '192.0.2.3'};`,
    'protocol device { scan time 10; }',
    // BIRD's defaults otherwise (scan time 60 s); learn off: BIRD leaves routes of others alone.
    `protocol kernel k { ${peer.family} { import none; export where source = RTS_BGP; }; learn off; }`,
    `protocol bgp ${peer.name} {`,
    `  local ${local} as ${RECEIVER_AS};`,
    `  neighbor ${peer.address} as ${RECEIVER_AS};`,
    '  direct;',
    '  passive on;',
    '  hold time 240;',
    `  ${peer.family} { import all; export none; };`,
    '}',
  ].join('\n') + '\n'
}

export async function startBirdKernel(topo: Topology, node: NetNode, peer: PeerSpec): Promise<Receiver> {
  const dir = await topo.tempDir('bird')
  const conf = join(dir, 'bird.conf')
  await writeFile(conf, birdConfig(node, peer, dir))
  const pidFile = join(dir, 'bird.pid')
  await topo.exec(node.ns, 'bird', ['-c', conf, '-s', join(dir, 'bird.ctl'), '-P', pidFile])
  const pid = await waitPidFile(pidFile, 5000)
  topo.trackPid(pid)
  let stopped = false
  return {
    name: 'BIRD',
    pid,
    settled: () => Promise.resolve(),
    died: () => {
      if (stopped) return undefined
      try {
        process.kill(pid, 0)
        return undefined
      } catch {
        return `BIRD exited: ${tail(join(dir, 'bird.log'))}`
      }
    },
    async stop() {
      stopped = true
      await stopPid(pid, 10_000)
    },
  }
}
