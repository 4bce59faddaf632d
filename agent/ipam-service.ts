// The agent's IPAM service for the CNI plugins: JSON over HTTP on a unix socket (mode 0600, root only),
// backed by ipam/'s Ipam. It validates requests and serialises mutations; allocation logic stays in ipam/.
// It must not wire anything, and it opens no datastore itself (the caller hands one in). With a state dir,
// a failed ADD's handle is released until confirmed (PendingReleases), and an assign over the socket whose
// answer never went out (the agent killed) is released at the next start (journal of assigns in flight).
// At start it also makes the releases plugins left owed (cni/release-spool.ts). None of these failure-path
// releases is made while a live wiring on this node records the handle's attachment (its host veth's
// ifalias): a failed repeat of an ADD must not take what the first one holds.

import { mkdirSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync, renameSync } from 'node:fs'
import { chmod, mkdir, readFile, rm } from 'node:fs/promises'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import { dirname, join } from 'node:path'
import type { Datastore } from '../config/index.js'
import { AddrError } from '../net/index.js'
import { blockCidr, ordinalAddress } from '../ipam/index.js'
import { type AutoAssignRequest, Ipam, IpamError } from '../ipam/index.js'
import type { AutoAssignResult, ReleaseResult } from '../ipam/index.js'
import { BLOCKS_PREFIX, IpamRecordError, decodeBlock } from '../ipam/index.js'
import { cachedInputs, loadPoolSpecs, readInputs } from './ipam-service-pools.js'
import type { ClusterState } from './cluster-state.js'
import { PendingReleases } from './pending-releases.js'
import { ClaimAhead } from './ipam-claim-ahead.js'

export { DEFAULT_MTU_FILE } from '../cni/index.js'
import { DEFAULT_MTU_FILE } from '../cni/index.js'
import { takeOwedReleases } from '../cni/index.js'
import { readAliases } from '../cni/index.js'
import { aliasNames } from '../cni/index.js'

export interface IpamServiceOptions {
  readonly store: Datastore
  readonly node: string
  readonly socket: string
  /**
   * The agent's watched view of the resources: an ADD takes its Node, IPAMConfig and pools from it (no read)
   * and its transaction checks their revisions, so a stale view fails it and they are read again. Without
   * it every ADD reads them.
   */
  readonly cluster?: ClusterState
  /** Where felix writes the pod MTU; reported in /v1/status so operators see what the plugins will use. */
  readonly mtuFile?: string
  /** The agent's state dir (PINTO_STATE_DIR): where pending releases and assigns in flight are kept across restarts. */
  readonly stateDir?: string
  /**
   * Claim the node's next block when its blocks have fewer free addresses than this (agent/ipam-claim-ahead.ts);
   * 0: never, claiming inline as Calico does; undefined: a quarter of a block.
   */
  readonly claimAheadBelow?: number | undefined
  /** Called when a release that had failed goes through: the datastore is back. */
  readonly onDatastoreBack?: () => void
  /**
   * Whether a live wiring on this node holds `handle`; by default, whether a link of this netns records its
   * attachment in its ifalias (cni/wiring-plan.ts aliasNames).
   */
  readonly held?: (handle: string) => Promise<boolean>
  /**
   * The pod's side of each request (agent/pod-ipam.ts): the assignment its pod's annotations ask for (read before
   * the request queues; undefined: an ordinary one), and word of each assign answered and each release by handle.
   */
  readonly pods?: {
    plan(req: AutoAssignRequest): Promise<((ipam: Ipam) => Promise<AutoAssignResult>) | undefined>
    assigned(req: AutoAssignRequest, result: AutoAssignResult): void
    released(handle: string): void
  }
  readonly log?: (msg: string, fields: Record<string, unknown>) => void
}

/** ADDs and DELs the CNI channel answered (done, failed, handed back to the plugin), and how its `ip` processes started. */
export interface CniChannelStatus {
  readonly done: number
  readonly failed: number
  readonly handedBack: number
  readonly ipStartedAhead: number
  readonly ipSpawnedOnDemand: number
}

class RequestError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message)
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function field<T>(body: Record<string, unknown>, key: string, check: (v: unknown) => v is T, what: string, fallback?: T): T {
  const v = body[key]
  if (v === undefined && fallback !== undefined) return fallback
  if (!check(v)) throw new RequestError(400, 'invalid', `${key}: expected ${what}, got ${JSON.stringify(v)}`)
  return v
}
const isString = (v: unknown): v is string => typeof v === 'string' && v !== ''
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 256
const isStringMap = (v: unknown): v is Record<string, string> => isObject(v) && Object.values(v).every((x) => typeof x === 'string')
const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString)

export class IpamService {
  readonly ipam: Ipam
  private server: Server | undefined
  /** Requests taken and not yet answered, which close() lets finish. */
  private readonly answering = new Set<Promise<void>>()
  /** Mutations run one at a time: one agent per node, so this only removes CAS storms between its own requests. */
  private queue: Promise<unknown> = Promise.resolve()
  /** Handles with a request queued or running, which the node's repair must leave alone. */
  private readonly busyHandles = new Map<string, number>()
  /** Handles whose release failed, retried until the datastore confirms (undefined without a state dir). */
  readonly pending: PendingReleases | undefined
  private readonly journalDir: string | undefined
  private journalSeq = 0
  /** The node's next block, claimed before an ADD needs it. */
  readonly ahead: ClaimAhead

  constructor(private readonly options: IpamServiceOptions) {
    const { store, cluster } = options
    this.ipam = new Ipam(store, {
      pools: () => loadPoolSpecs(store),
      inputs: { read: async (node, fresh) => (fresh || cluster === undefined ? readInputs(store, node) : cachedInputs(cluster, node)) },
    })
    this.ahead = new ClaimAhead({ ipam: this.ipam, node: options.node, below: options.claimAheadBelow, log: options.log })
    this.held = options.held ?? aliasHeld
    if (options.stateDir !== undefined) {
      this.journalDir = join(options.stateDir, 'ipam-assigns')
      this.pending = new PendingReleases({
        dir: join(options.stateDir, 'ipam-releases'),
        held: this.held,
        release: (handle) => this.serial(async () => {
          // A new ADD of the same handle took it over meanwhile: its addresses are not ours to free.
          if (this.pending?.has(handle) === true) await this.ipam.releaseByHandle(handle)
        }),
        ...(options.onDatastoreBack !== undefined ? { onRecovered: options.onDatastoreBack } : {}),
        ...(options.log !== undefined ? { log: options.log } : {}),
      })
    }
  }

  /** Whether a request for `handle` is queued or running now. */
  busy(handle: string): boolean {
    return this.busyHandles.has(handle)
  }

  private readonly held: (handle: string) => Promise<boolean>

  /**
   * Releases `handle`, a failed request's, until the datastore confirms (now, or retried with backoff; kept
   * across restarts with a state dir), once no live wiring holds it.
   */
  releaseLater(handle: string): void {
    if (this.pending !== undefined) this.pending.add(handle)
    else void this.serial(async () => (await this.held(handle)) || (await this.ipam.releaseByHandle(handle))).catch(() => undefined)
  }

  /**
   * Assigns that came over the socket and whose answer never went out (the agent was killed): each is
   * released, as the plugin answered failure. Runs before the socket listens.
   */
  private replayJournal(): void {
    const dir = this.journalDir
    if (dir === undefined) return
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    for (const name of readdirSync(dir)) {
      const file = join(dir, name)
      if (!name.startsWith('.')) {
        try {
          const { handle } = JSON.parse(readFileSync(file, 'utf8')) as { handle?: unknown }
          if (typeof handle === 'string') {
            this.options.log?.('releasing an IPAM assign the last run took and never answered', { handle })
            this.releaseLater(handle)
          }
        } catch {
          // Torn before the rename made it whole: the assign never started.
        }
      }
      rmSync(file, { force: true })
    }
  }

  /**
   * Releases the plugins could not make (an assign of theirs was never answered and the agent stayed away:
   * cni/release-spool.ts); a later ADD that wired the attachment keeps it (releaseLater).
   */
  private settleOwedReleases(): void {
    for (const r of takeOwedReleases(this.options.socket)) {
      this.options.log?.('releasing an IPAM assign a plugin never had answered', { handle: r.handle })
      this.releaseLater(r.handle)
    }
  }

  /** Records an assign over the socket before its work starts; the entry goes before its answer does. */
  private journal(handle: string): string | undefined {
    if (this.journalDir === undefined) return undefined
    const name = `${process.pid}-${++this.journalSeq}`
    const tmp = join(this.journalDir, `.${name}`)
    writeFileSync(tmp, JSON.stringify({ handle }), { mode: 0o600 })
    renameSync(tmp, join(this.journalDir, name))
    return name
  }

  private unjournal(name: string | undefined): void {
    if (name !== undefined && this.journalDir !== undefined) unlinkSync(join(this.journalDir, name))
  }

  /**
   * Reads what the first ADD would otherwise read cold: the node's blocks, decoded (so it is one transaction;
   * the ADD takes its pools from the ADD's inputs, not from here); then checks whether a block is due to be
   * claimed ahead. A failure is logged, not thrown: the ADDs then read for themselves.
   */
  async prepare(): Promise<void> {
    try {
      const blocks = await this.ipam.warm(this.options.node)
      this.options.log?.('IPAM blocks of this node read before the first ADD', { blocks })
      this.ahead.note(([4, 6] as const).filter((f) => this.ipam.headroom(this.options.node, f) !== undefined))
    } catch (err) {
      this.options.log?.('reading this node\'s IPAM blocks at start failed; the first ADD reads them', { err: (err as Error).message })
    }
  }

  /** Listens on the socket (replacing a stale one), mode 0600; ADDs wait for prepare(), which starts now. */
  async listen(): Promise<void> {
    void this.serial(() => this.prepare())
    this.replayJournal()
    this.settleOwedReleases()
    this.pending?.start()
    const { socket } = this.options
    await mkdir(dirname(socket), { recursive: true, mode: 0o700 })
    await rm(socket, { force: true })
    const server = createServer((req, res) => {
      const p = this.handle(req, res)
      this.answering.add(p)
      void p.finally(() => this.answering.delete(p))
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(socket, () => resolve())
    })
    await chmod(socket, 0o600)
    this.server = server
  }

  /**
   * Stops taking requests and answers those taken. The socket's path goes first, so a plugin that comes
   * now hears "pinto-node is not running" (try again later) rather than a connection cut in its request;
   * one that is mid-request gets its answer, for up to `drainMs`, before the last connections are cut.
   */
  async close(drainMs = 5000): Promise<void> {
    const s = this.server
    this.server = undefined
    if (s !== undefined) {
      await rm(this.options.socket, { force: true })
      const closed = new Promise<void>((resolve) => s.close(() => resolve()))
      s.closeIdleConnections()
      let timer: NodeJS.Timeout | undefined
      await Promise.race([Promise.allSettled([...this.answering]), new Promise((r) => (timer = setTimeout(r, drainMs)))])
      clearTimeout(timer)
      s.closeAllConnections()
      await closed
    }
    await this.pending?.close()
    await this.queue.catch(() => undefined)
    await this.ahead.settled()
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn)
    this.queue = run.catch(() => undefined)
    return run
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let status = 200
    let reply: unknown
    const entry: { name?: string | undefined } = {}
    try {
      reply = await this.route(req, entry)
    } catch (err) {
      ;[status, reply] = errorReply(err)
    }
    // Out of the journal before the answer goes: once the plugin may have it, nothing may roll it back.
    try {
      this.unjournal(entry.name)
    } catch (err) {
      ;[status, reply] = errorReply(err)
    }
    const text = JSON.stringify(reply)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  }

  private async route(req: IncomingMessage, entry: { name?: string | undefined }): Promise<unknown> {
    const url = new URL(req.url ?? '/', 'http://pinto')
    const key = `${req.method} ${url.pathname}`
    switch (key) {
      case 'GET /v1/status': return this.status()
      case 'POST /v1/assign': {
        const body = await readBody(req)
        if (isString(body['handle'])) entry.name = this.journal(body['handle'])
        return this.assign(body)
      }
      case 'POST /v1/release': return this.release(await readBody(req))
      case 'GET /v1/allocations': return { allocations: await this.allocations(url.searchParams.get('handlePrefix') ?? '') }
      default: throw new RequestError(404, 'not-found', `no route ${key}`)
    }
  }

  /** What the CNI channel beside this service reports in /v1/status (set by whoever starts the channel). */
  channelStatus: (() => CniChannelStatus) | undefined

  async status(): Promise<{ ready: boolean; node: string; pools: string[]; mtu: number | null; reason?: string; cniChannel?: CniChannelStatus }> {
    const pools = (await loadPoolSpecs(this.options.store)).filter((p) => p.disabled !== true).map((p) => p.cidr)
    const mtuText = await readFile(this.options.mtuFile ?? DEFAULT_MTU_FILE, 'utf8').catch(() => '')
    const mtu = /^\d+\s*$/.test(mtuText) ? Number(mtuText) : null
    const channel = this.channelStatus?.()
    return {
      ready: pools.length > 0, node: this.options.node, pools, mtu,
      ...(pools.length === 0 ? { reason: 'no enabled IPPool' } : {}),
      ...(channel !== undefined ? { cniChannel: channel } : {}),
    }
  }

  /** POST /v1/assign's work, for callers in this process too (the CNI channel): errors as errorReply maps them. */
  async assign(body: Record<string, unknown>): Promise<{ node: string } & AutoAssignResult> {
    let req: AutoAssignRequest = {
      handle: field(body, 'handle', isString, 'a handle id'),
      node: field(body, 'node', isString, 'a node name', this.options.node),
      num4: field(body, 'num4', isCount, 'an integer 0..256', 0),
      num6: field(body, 'num6', isCount, 'an integer 0..256', 0),
      attrs: field(body, 'attrs', isStringMap, 'an object of strings', {}),
      ...(body['pools'] !== undefined && Array.isArray(body['pools']) && (body['pools'] as unknown[]).length !== 0 ? { pools: field(body, 'pools', isStringList, 'a list of pool names or CIDRs') } : {}),
    }
    // Calico's GC reads the node from the allocation's attributes.
    req = { ...req, attrs: { ...req.attrs, node: req.node } }
    if ((req.num4 ?? 0) + (req.num6 ?? 0) === 0) throw new RequestError(400, 'invalid', 'num4, num6: nothing requested')
    const handle = req.handle
    const planned = await this.options.pods?.plan(req)
    return this.serialFor(handle, async () => {
      this.pending?.drop(handle)
      try {
        const r = planned !== undefined ? await planned(this.ipam) : await this.ipam.autoAssign(req)
        if (req.node === this.options.node) this.ahead.note([...(r.ipv4.length > 0 ? [4 as const] : []), ...(r.ipv6.length > 0 ? [6 as const] : [])])
        this.options.pods?.assigned(req, r)
        return { node: req.node, ipv4: r.ipv4, ipv6: r.ipv6 }
      } catch (err) {
        // Whatever the failure, a write may have landed: the ADD answers failure, so its handle goes.
        if (!(err instanceof IpamError && err.code === 'invalid') && !(err instanceof IpamRecordError)) this.releaseLater(handle)
        throw err
      }
    })
  }

  /** serial(), with `handle` counted busy from queueing to the end. */
  private async serialFor<T>(handle: string, fn: () => Promise<T>): Promise<T> {
    this.busyHandles.set(handle, (this.busyHandles.get(handle) ?? 0) + 1)
    try {
      return await this.serial(fn)
    } finally {
      const n = (this.busyHandles.get(handle) ?? 1) - 1
      if (n === 0) this.busyHandles.delete(handle)
      else this.busyHandles.set(handle, n)
    }
  }

  /** POST /v1/release's work, for callers in this process too. */
  release(body: Record<string, unknown>): Promise<ReleaseResult> {
    if (body['handle'] !== undefined) {
      const handle = field(body, 'handle', isString, 'a handle id')
      return this.serialFor(handle, async () => {
        this.pending?.drop(handle)
        try {
          const r = await this.ipam.releaseByHandle(handle)
          this.options.pods?.released(handle)
          return r
        } catch (err) {
          if (!(err instanceof IpamRecordError)) this.releaseLater(handle)
          throw err
        }
      })
    }
    const addrs = field(body, 'addresses', isStringList, 'a list of addresses')
    return this.serial(() => this.ipam.releaseIPs(addrs.map((address) => ({ address }))))
  }

  /** Every allocation whose handle starts with `prefix` (all when empty), with its attributes, for CNI GC. */
  async allocations(prefix: string): Promise<{ handle: string; address: string; attrs: Readonly<Record<string, string>> }[]> {
    const { items } = await this.options.store.list(BLOCKS_PREFIX)
    const out: { handle: string; address: string; attrs: Readonly<Record<string, string>> }[] = []
    for (const kv of items) {
      const b = decodeBlock(kv.key, kv.value)
      const cidr = blockCidr(b)
      b.allocations.forEach((idx, ord) => {
        const attr = idx === null ? undefined : b.attributes[idx]
        if (attr?.handleId && attr.handleId.startsWith(prefix)) out.push({ handle: attr.handleId, address: ordinalAddress(cidr, ord), attrs: attr.secondary })
      })
    }
    return out
  }
}

/** The HTTP status and body the service answers `err` with. */
export function errorReply(err: unknown): [number, { code: string; message: string }] {
  if (err instanceof RequestError) return [err.status, { code: err.code, message: err.message }]
  if (err instanceof IpamError) return [err.code === 'invalid' ? 400 : 409, { code: err.code, message: err.message }]
  if (err instanceof AddrError || err instanceof IpamRecordError) return [400, { code: 'invalid', message: err.message }]
  const e = err as { code?: unknown; message?: unknown }
  // The datastore being unreachable is transient: 503 makes the plugin answer "try again later".
  if (e.code === 'unavailable') return [503, { code: 'unavailable', message: String(e.message) }]
  return [500, { code: 'internal', message: String(e.message ?? err) }]
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length
    if (size > 65536) throw new RequestError(413, 'too-large', 'request body over 64 KiB')
    chunks.push(c)
  }
  let body: unknown
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch (e) {
    throw new RequestError(400, 'invalid', `body is not JSON: ${(e as Error).message}`)
  }
  if (!isObject(body)) throw new RequestError(400, 'invalid', 'body: expected a JSON object')
  return body
}

/** Whether a link of this netns records the attachment whose handle is `handle` (its live wiring). */
async function aliasHeld(handle: string): Promise<boolean> {
  for (const alias of (await readAliases()).values()) if (aliasNames(alias, handle)) return true
  return false
}
