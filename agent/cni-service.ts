// pinto-node's end of the CNI channel (cni/agent-channel.ts): reads ADD and DEL requests from the FIFO
// beside the IPAM socket, runs the plugin's own ADD or DEL (cmdAdd, cmdDel) here with the IPAM service
// in-process, and renames each answer into place under the request's id. Antrea's and Kube-OVN's agents
// serve their thin CNI binaries the same way. A request it cannot do as the plugin would (the plugin in
// another network namespace, a netns path it cannot see) it hands back untouched, and the plugin does it.
// Each ADD is recorded in the recovery journal before its work (agent/recovery/cni-adds.ts), and one the
// last run never answered is rolled back when the IPAM service starts, before the FIFO opens.

import { execFile } from 'node:child_process'
import { constants, existsSync, openSync } from 'node:fs'
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Socket } from 'node:net'
import { promisify } from 'node:util'
import { type ChannelReply, type ChannelRequest, REQUEST_ID, channelPaths } from '../cni/index.js'
import { decodeJson, handleOf, parseNetConf, podIdentity } from '../cni/index.js'
import { vethName } from '../cni/index.js'
import { ownedBy } from '../cni/index.js'
import { cmdAdd, cmdDel } from '../cni/index.js'
import { CniError, ERR, checkVerbAllowed, parseEnv } from '../cni/index.js'
import { Dataplane, sameFile, type RtnlPort } from '../cni/index.js'
import { NetnsRtnl } from '../felix/index.js'
import type { IpamService } from './ipam-service.js'
import { WarmRunner } from './warm-runner.js'
import { LocalIpam } from './cni-local-ipam.js'
import type { AddEntry, PodRecovery } from './recovery/index.js'

/** A line longer than any request a plugin writes (PIPE_BUF) is garbage: dropped, not buffered without end. */
const MAX_LINE = 65536

/** An answer nobody took in this long (its plugin died or gave up after 30 s) is removed. */
const STALE_REPLY_MS = 120_000

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string')

/** The request's fields, checked: the FIFO is root's only, but a bad line must not take the agent down. */
function checkRequest(v: Record<string, unknown>): ChannelRequest {
  const env = v['env']
  const bad = (what: string): never => {
    throw new CniError(ERR.invalidEnv, `CNI channel request: ${what}`)
  }
  if (v['v'] !== 1) bad(`version ${JSON.stringify(v['v'])} is not 1`)
  if (v['command'] !== 'ADD' && v['command'] !== 'DEL') bad(`command ${JSON.stringify(v['command'])} is not ADD or DEL`)
  if (typeof v['pid'] !== 'number' || !Number.isInteger(v['pid']) || v['pid'] <= 0) bad('pid is not a process id')
  if (typeof v['stdin'] !== 'string') bad('stdin is not a string')
  if (!isObject(env)) return bad('env is not an object')
  for (const k of ['containerId', 'netns', 'ifname']) if (typeof env[k] !== 'string') bad(`env.${k} is not a string`)
  const args = env['args']
  if (!isObject(args) || !Object.values(args).every((x) => typeof x === 'string')) bad('env.args is not an object of strings')
  if (!isStrings(env['path'])) bad('env.path is not a list of strings')
  return v as unknown as ChannelRequest
}

/**
 * Pod wiring through rtnetlink sockets where the FFI loads; else, or with PINTO_CNI_WIRING=ip, through
 * `ip`, as the plugin does it.
 */
function rtnlPort(): RtnlPort | undefined {
  const chosen = process.env['PINTO_CNI_WIRING'] ?? 'netlink'
  if (chosen !== 'netlink' && chosen !== 'ip') throw new Error(`PINTO_CNI_WIRING: ${JSON.stringify(chosen)} is not netlink or ip`)
  if (chosen === 'ip') return undefined
  return NetnsRtnl.available().ok ? { open: (netns) => NetnsRtnl.open(netns) } : undefined
}

/** How the agent answered a request: did it, failed it, or handed it back to the plugin. */
export type CniOutcome = 'done' | 'failed' | 'handed-back'

export class CniService {
  private reader: Socket | undefined
  private sweeper: ReturnType<typeof setInterval> | undefined
  private readonly inFlight = new Set<Promise<void>>()
  /** The ids of the requests being served. */
  private readonly serving = new Set<string>()
  private readonly port: LocalIpam
  private readonly paths: { readonly requests: string; readonly replies: string }
  /** Requests answered, by outcome: for the agent's status and the tests. */
  readonly counts = { done: 0, failed: 0, handedBack: 0 }
  /** Hears of each request answered: its command, outcome and seconds from taken to answer written (the metrics'). */
  onAnswer: ((command: string, outcome: CniOutcome, seconds: number) => void) | undefined

  /** The `ip` processes ADDs use where rtnetlink cannot serve (reads, repairs), started ahead of need. */
  readonly warm = new WarmRunner()
  private readonly dataplane: Dataplane
  private readonly staleReplyMs: number
  private readonly ipam: IpamService

  private readonly recovery: PodRecovery

  constructor(options: { readonly socket: string; readonly ipam: IpamService; readonly staleReplyMs?: number }) {
    this.staleReplyMs = options.staleReplyMs ?? STALE_REPLY_MS
    this.ipam = options.ipam
    this.port = new LocalIpam(options.ipam)
    this.paths = channelPaths(options.socket)
    this.dataplane = new Dataplane(this.warm.run, rtnlPort())
    this.recovery = options.ipam.recovery
  }

  /**
   * Makes the answers' directory and the FIFO, under a temporary name until it has its reader, then renamed
   * over any stale one: a FIFO without a reader would tell plugins the agent is down. On failure nothing
   * is left, and the plugins wire pods themselves.
   */
  async listen(): Promise<void> {
    const { requests, replies } = this.paths
    const tmp = `${requests}.${process.pid}`
    let reader: Socket | undefined
    try {
      await mkdir(replies, { recursive: true, mode: 0o700 })
      // Answers the last run renamed into place stay for their plugins (a plugin still waiting takes its
      // answer from the next run); temporary files go. The sweep removes answers nobody takes.
      for (const name of await readdir(replies)) if (name.startsWith('.')) await rm(join(replies, name), { force: true })
      await rm(tmp, { force: true })
      await promisify(execFile)('mkfifo', ['-m', '600', tmp])
      // Read and write: the agent is a writer too, so the FIFO never reads as ended when plugins close it.
      reader = new Socket({ fd: openSync(tmp, constants.O_RDWR | constants.O_NONBLOCK), readable: true, writable: false })
      await rename(tmp, requests)
    } catch (err) {
      reader?.destroy()
      await rm(tmp, { force: true })
      await rm(replies, { recursive: true, force: true })
      throw err
    }
    let buf = ''
    reader.setEncoding('utf8')
    reader.on('data', (chunk: string) => {
      buf += chunk
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        this.track(this.serve(line))
      }
      if (buf.length > MAX_LINE) buf = ''
    })
    reader.on('error', () => undefined)
    this.reader = reader
    this.ipam.channelStatus = () => ({ ...this.counts, ipStartedAhead: this.warm.counts.warm, ipSpawnedOnDemand: this.warm.counts.cold })
    this.warm.refill()
    this.sweeper = setInterval(() => void this.sweep(), this.staleReplyMs / 2)
    this.sweeper.unref()
  }

  /** Removes answers left untaken. */
  private async sweep(): Promise<void> {
    const dir = this.paths.replies
    const now = Date.now()
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const st = await stat(`${dir}/${name}`).catch(() => undefined)
      if (st !== undefined && now - st.mtimeMs > this.staleReplyMs) await rm(`${dir}/${name}`, { force: true })
    }
  }

  /**
   * Stops taking requests (new plugins find no FIFO and go to the socket), finishes those taken and gives
   * their plugins up to two seconds to pick the answers up before the directory goes.
   */
  async close(): Promise<void> {
    const reader = this.reader
    this.reader = undefined
    if (reader === undefined) return
    clearInterval(this.sweeper)
    this.ipam.channelStatus = undefined
    await rm(this.paths.requests, { force: true })
    reader.destroy()
    // Everything taken is in `serving` until its answer is written; wait for those answers to be picked up.
    const answering = [...this.serving]
    await Promise.all(this.inFlight)
    this.warm.close()
    const until = Date.now() + 2000
    while (Date.now() < until && answering.some((id) => existsSync(`${this.paths.replies}/${id}`))) await new Promise((r) => setTimeout(r, 5))
    await rm(this.paths.replies, { recursive: true, force: true })
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p)
    void p.finally(() => {
      this.inFlight.delete(p)
      // Spawning holds the thread: replace what was taken once no ADD is waiting on it.
      if (this.inFlight.size === 0 && this.reader !== undefined) setImmediate(() => this.warm.refill())
    })
  }

  private async serve(line: string): Promise<void> {
    let raw: unknown
    try {
      raw = JSON.parse(line)
    } catch {
      return // no id to answer to
    }
    if (!isObject(raw) || typeof raw['id'] !== 'string' || !REQUEST_ID.test(raw['id'])) return
    const id = raw['id']
    const t0 = performance.now()
    this.serving.add(id)
    let reply: ChannelReply
    let entry: AddEntry | undefined
    try {
      const req = checkRequest(raw)
      reply = await this.do(req, (e) => {
        this.recovery.addBegun(e)
        entry = e
      })
    } catch (err) {
      const e = err instanceof CniError ? err : new CniError(ERR.io, (err as Error).message ?? String(err))
      reply = { ok: false, code: e.code, msg: e.message, details: e.details }
    }
    const outcome: CniOutcome = 'fallback' in reply ? 'handed-back' : reply.ok ? 'done' : 'failed'
    if (outcome === 'handed-back') this.counts.handedBack++
    else if (outcome === 'done') this.counts.done++
    else this.counts.failed++
    const file = `${this.paths.replies}/${id}`
    const tmp = `${this.paths.replies}/.${id}`
    try {
      await writeFile(tmp, JSON.stringify(reply), { mode: 0o600 })
      // The commit point: from here the plugin may have the answer.
      await rename(tmp, file)
    } catch {
      // Not written (a disk error, say): the plugin gives up and the runtime asks again; nothing stays wired.
      if (entry !== undefined && 'ok' in reply && reply.ok) await this.recovery.addUnanswered(entry).catch(() => undefined)
      await rm(tmp, { force: true })
    }
    if (entry !== undefined) this.recovery.addAnswered(entry.id)
    this.serving.delete(id)
    this.onAnswer?.(raw['command'] === 'DEL' ? 'DEL' : 'ADD', outcome, (performance.now() - t0) / 1000)
  }

  /** Handles of ADDs being served now (the node's IPAM repair leaves them alone). */
  busy(handle: string): boolean {
    return this.servingHandles.has(handle)
  }

  private readonly servingHandles = new Set<string>()

  private async do(req: ChannelRequest, journal: (e: AddEntry) => void): Promise<ChannelReply> {
    // The host end of the veth is in this process's namespace, which must be the plugin's.
    if (!sameFile(`/proc/${req.pid}/ns/net`, '/proc/self/ns/net')) return { fallback: 'the plugin runs in another network namespace than pinto-node' }
    // A DEL may come with its netns gone or none at all; one the plugin has and the agent cannot see is the plugin's.
    if ((req.command === 'ADD' || req.env.netns !== '') && !existsSync(req.env.netns)) return { fallback: `pinto-node does not see ${req.env.netns}` }
    const { containerId, netns, ifname, args, path } = req.env
    const env = parseEnv({
      CNI_COMMAND: req.command,
      CNI_CONTAINERID: containerId,
      CNI_NETNS: netns,
      CNI_IFNAME: ifname,
      CNI_ARGS: Object.entries(args).map(([k, v]) => `${k}=${v}`).join(';'),
      CNI_PATH: path.join(':'),
    })
    const conf = parseNetConf(decodeJson(req.stdin), 'main')
    checkVerbAllowed(req.command, conf.cniVersion)
    const inv = { conf, env, stdin: req.stdin }
    if (req.command === 'DEL') {
      await cmdDel(inv, this.dataplane, this.port)
      return { ok: true }
    }
    const owner = handleOf(conf.name, containerId, ifname)
    const handle = conf.ipam?.type === 'pinto-ipam' ? owner : ''
    const hostVeth = vethName(conf.vethPrefix, podIdentity(env.args), containerId, ifname)
    // Read once the work under way on that name is done: a veth being made has no owner yet.
    const recorded = await this.dataplane.exclusive(hostVeth, () => this.dataplane.owner(hostVeth)).catch(() => undefined)
    const prior = recorded !== undefined && ownedBy(recorded, { owner, containerId })
    journal({ op: 'add', id: req.id, containerId, netns, ifname, hostVeth, handle, owner, ...(prior ? { prior: true as const } : {}) })
    this.servingHandles.add(handle)
    try {
      return { ok: true, result: await cmdAdd(inv, this.dataplane, this.port) }
    } finally {
      this.servingHandles.delete(handle)
    }
  }
}
