// The demo's top-of-rack router: BIRD 2 in its own namespace on the fabric, eBGP (AS 65000) with every node
// (AS 64512), originating 203.0.113.0/24 and learning the nodes' blocks. It renders bird.conf, starts BIRD
// and reads its state through birdc; the namespace's removal (cluster.ts) ends the process.

import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execa } from 'execa'

export const TOR_ADDRESS = '192.0.2.1'
export const TOR_AS = 65000
export const TOR_PREFIX = '203.0.113.0/24'

export interface TorNeighbor {
  readonly name: string
  readonly address: string
  readonly as: number
}

export interface Tor {
  readonly ns: string
  readonly pid: number
  readonly socket: string
  birdc(...args: string[]): Promise<string>
  /** Per neighbor (protocol name): its BGP state as BIRD shows it. */
  sessions(): Promise<Map<string, string>>
  /** Prefixes in BIRD's table that came from BGP (not its own static route). */
  learned(): Promise<string[]>
}

/**
 * bird.conf. Pure. Exports only its own static route, so nodes never see each other's blocks through it. With
 * `kernel`, the routes it learns go into its namespace's kernel too, so it routes to the pods as a rack's
 * router does (for hosts on the fabric that run no pinto, such as a control plane).
 */
export function renderTorConfig(dir: string, neighbors: readonly TorNeighbor[], originate: readonly string[] = [TOR_PREFIX], kernel = false): string {
  const lines = [
    `log "${join(dir, 'bird.log')}" all;`,
    `router id ${TOR_ADDRESS};`,
    'protocol device { scan time 10; }',
    ...(kernel ? ['protocol kernel { ipv4 { export where source = RTS_BGP; }; }'] : []),
    `protocol static torstatic { ipv4; ${originate.map((p) => `route ${p} blackhole;`).join(' ')} }`,
    'template bgp node {',
    `  local ${TOR_ADDRESS} as ${TOR_AS};`,
    '  connect delay time 1;',
    '  graceful restart on;',
    '  ipv4 { import all; export where source = RTS_STATIC; };',
    '}',
  ]
  for (const n of neighbors) lines.push(`protocol bgp ${n.name} from node { neighbor ${n.address} as ${n.as}; }`)
  return lines.join('\n') + '\n'
}

export async function startTor(ns: string, dir: string, neighbors: readonly TorNeighbor[], originate?: readonly string[], kernel = false): Promise<Tor> {
  await mkdir(dir, { recursive: true })
  const conf = join(dir, 'bird.conf')
  const socket = join(dir, 'bird.ctl')
  const pidFile = join(dir, 'bird.pid')
  await writeFile(conf, renderTorConfig(dir, neighbors, originate, kernel))
  const start = await execa('ip', ['netns', 'exec', ns, 'bird', '-c', conf, '-s', socket, '-P', pidFile], { reject: false })
  if (start.exitCode !== 0) throw new Error(`BIRD did not start: ${String(start.stderr).trim()}`)
  const birdc = async (...args: string[]): Promise<string> => String((await execa('birdc', ['-s', socket, ...args])).stdout)
  let pid: number
  const deadline = Date.now() + 5000
  for (;;) {
    pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim())
    const up = pid > 0 && (await birdc('show', 'status').catch(() => '')).includes('Daemon is up')
    if (up) break
    if (Date.now() > deadline) throw new Error(`BIRD did not come up within 5 s (see ${dir}/bird.log)`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    ns,
    pid,
    socket,
    birdc,
    async sessions() {
      const out = new Map<string, string>()
      // name proto table state since info: for BGP the session state is the first word of info.
      for (const line of (await birdc('show', 'protocols')).split('\n')) {
        const f = line.trim().split(/\s+/)
        if (f[1] === 'BGP' && f[0] !== undefined) out.set(f[0], f[5] ?? f[3] ?? 'unknown')
      }
      return out
    },
    async learned() {
      const out: string[] = []
      let prefix = ''
      for (const line of (await birdc('show', 'route', 'table', 'master4')).split('\n')) {
        const m = /^(\d+\.\d+\.\d+\.\d+\/\d+)?\s+\w+ \[(\S+)/.exec(line)
        if (m === null) continue
        if (m[1] !== undefined) prefix = m[1]
        if (m[2] !== 'torstatic' && !out.includes(prefix)) out.push(prefix)
      }
      return out.sort()
    },
  }
}
