// The test side of the pinto runner: starts pinto-runner.js inside a node namespace through the harness,
// sends it JSON-line commands and waits for the matching answers. Kills only its own process, by PID.

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ResultPromise } from 'execa'
import type { NetNode, Topology } from '../harness/netns.js'
import { isAlive } from '../harness/pid.js'
import { remaining, waitFor } from '../harness/wait.js'
import type { PeerStatus } from '../../bgp/session/peer.js'
import type { RunnerConfig } from './runner-config.js'
import { AGENT_NODE_FLAGS } from '../../agent/node-flags.js'

const RUNNER = join(fileURLToPath(new URL('.', import.meta.url)), 'pinto-runner.js')

/** A path as the runner prints it. */
export interface PintoRoute {
  readonly prefix: string
  readonly peer: string | undefined
  readonly stale: boolean
  readonly nextHop: readonly string[]
  readonly attrs: {
    readonly asPath?: readonly { type: string; asns: number[] }[]
    readonly nextHop?: string
    readonly med?: number
    readonly localPref?: number
    readonly communities?: readonly string[]
    readonly largeCommunities?: readonly string[]
    readonly originatorId?: string
    readonly clusterList?: readonly string[]
  }
  readonly reason?: string
}

export function asns(r: PintoRoute): number[] {
  return (r.attrs.asPath ?? []).flatMap((s) => s.asns)
}

type Answer = Record<string, unknown> & { ok: boolean; error?: string }

export class Pinto {
  private child: ResultPromise | undefined
  private nextId = 1
  private readonly waiting = new Map<number, (a: Answer) => void>()
  private buffer = ''
  pid = 0
  port = 0
  readonly log: string

  private constructor(
    private readonly topo: Topology,
    readonly node: NetNode,
    readonly dir: string,
    private config: RunnerConfig,
  ) {
    this.log = join(dir, 'pinto.log')
  }

  static async start(topo: Topology, node: NetNode, config: RunnerConfig, opts: { nodeArgs?: readonly string[] } = {}): Promise<Pinto> {
    const p = new Pinto(topo, node, await topo.tempDir('pinto'), config)
    await p.launch(opts.nodeArgs ?? [])
    return p
  }

  private async launch(nodeArgs: readonly string[]): Promise<void> {
    const file = join(this.dir, 'config.json')
    await writeFile(file, JSON.stringify({ log: this.log, ...this.config }, null, 1))
    const child = this.topo.spawn(this.node.ns, process.execPath, [...AGENT_NODE_FLAGS, ...nodeArgs, RUNNER, file], {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: { file: join(this.dir, 'stderr.log') },
      buffer: false,
    })
    this.child = child
    this.buffer = ''
    let ready: Answer | undefined
    child.stdout?.on('data', (d: Buffer) => {
      this.buffer += d.toString()
      let nl: number
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl)
        this.buffer = this.buffer.slice(nl + 1)
        // Node's own diagnostics (--trace-gc, say) print to stdout too: passed on, not parsed.
        if (!line.startsWith('{')) {
          process.stderr.write(`${this.node.name}: ${line}\n`)
          continue
        }
        const a = JSON.parse(line) as Answer
        if (a['event'] === 'ready') ready = a
        const id = a['id']
        if (typeof id === 'number') {
          this.waiting.get(id)?.(a)
          this.waiting.delete(id)
        }
      }
    })
    const r = await waitFor(() => ready ?? (child.exitCode !== null ? 'exited' : undefined), { timeoutMs: 10000, what: `pinto runner in ${this.node.name} ready` })
    if (r === 'exited') throw new Error(`pinto runner in ${this.node.name} exited with ${child.exitCode}; see ${this.dir}/stderr.log`)
    this.pid = Number(r['pid'])
    this.port = Number(r['port'])
  }

  /** Sends one command and resolves with its answer; rejects with the runner's error text. */
  async cmd(cmd: string, args: Record<string, unknown> = {}, timeoutMs = 15000): Promise<Answer> {
    const child = this.child
    if (child === undefined || child.exitCode !== null || !isAlive(this.pid)) throw new Error(`pinto runner in ${this.node.name} is not running`)
    const id = this.nextId++
    const answer = new Promise<Answer>((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiting.delete(id)
        reject(new Error(`pinto runner: no answer to ${cmd} in ${timeoutMs} ms`))
      }, timeoutMs)
      this.waiting.set(id, (a) => {
        clearTimeout(t)
        resolve(a)
      })
    })
    child.stdin?.write(JSON.stringify({ id, cmd, ...args }) + '\n')
    const a = await answer
    if (!a.ok) throw new Error(`pinto runner ${cmd}: ${a.error}`)
    return a
  }

  async peers(): Promise<PeerStatus[]> {
    return (await this.cmd('status'))['peers'] as PeerStatus[]
  }

  async peer(name: string): Promise<PeerStatus> {
    const p = (await this.peers()).find((x) => x.name === name)
    if (p === undefined) throw new Error(`pinto has no peer ${name}`)
    return p
  }

  async waitEstablished(name: string, deadline: number): Promise<PeerStatus> {
    return waitFor(async () => {
      const p = await this.peer(name)
      return p.state === 'Established' ? p : undefined
    }, { timeoutMs: remaining(deadline), intervalMs: 100, what: `pinto in ${this.node.name}: session ${name} Established` })
  }

  async locRib(): Promise<PintoRoute[]> {
    return (await this.cmd('loc-rib'))['routes'] as PintoRoute[]
  }

  async adjRibIn(peer: string): Promise<PintoRoute[]> {
    return (await this.cmd('adj-rib-in', { peer }))['routes'] as PintoRoute[]
  }

  /** Waits until the Loc-RIB holds a best path for `prefix` satisfying `pred`. */
  async waitRoute(prefix: string, what: string, pred: (r: PintoRoute) => boolean = () => true, timeoutMs = 15000): Promise<PintoRoute> {
    return waitFor(async () => (await this.locRib()).find((r) => r.prefix === prefix && pred(r)), { timeoutMs, intervalMs: 100, what: `pinto: ${what}` })
  }

  async originate(prefix: string, attrs: Record<string, unknown> = {}): Promise<void> {
    await this.cmd('originate', { prefix, attrs })
  }

  /** SIGKILL: no NOTIFICATION, no FIN sent by us (the kernel closes the socket). */
  async kill(): Promise<void> {
    const child = this.child
    if (child === undefined) return
    child.kill('SIGKILL')
    await child
    await waitFor(() => !isAlive(this.pid), { timeoutMs: 5000, what: `pinto PID ${this.pid} gone` })
  }

  /** Starts the runner again in the same namespace, with the same config plus `change`. */
  async restart(change: Partial<RunnerConfig> = {}): Promise<void> {
    if (this.child !== undefined && this.child.exitCode === null) await this.kill()
    this.config = { ...this.config, ...change, speaker: { ...this.config.speaker, ...(change.speaker ?? {}) } }
    await this.launch([])
  }

  async stop(): Promise<void> {
    const child = this.child
    if (child === undefined || child.exitCode !== null) return
    child.stdin?.end()
    await Promise.race([child, new Promise((r) => setTimeout(r, 3000))])
    if (child.exitCode === null) await this.kill()
  }
}
