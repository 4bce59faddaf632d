// pinto-node's repair of its own node's IPAM records: runs the leak check, keeps the problems in blocks
// affine to this node (and handles naming them), and repairs one only when it is certainly orphaned: seen
// unchanged on two runs at least the grace period apart, and its handle not in a request now. It repairs
// nothing of other nodes and no block or affinity (those stay for `pintoctl ipam check --repair`).
// The periodic pass reads only this node's blocks and the handles they name, so its cost does not grow with
// the cluster; the pass that reads every handle (the only way to find a handle record that holds no address,
// which leaks no address) runs once a day per node, at a time of its own.

import { aliasNames, readAliases } from '../../cni/index.js'
import { type AllocationBlock, type Ipam, type Problem, BLOCKS_PREFIX, blockKey, checkIpam, checkOwnBlocks, decodeBlock, decodeHandle, handleKey, hostAffinity } from '../../ipam/index.js'
import { readCidr } from '../../net/index.js'

export type RepairKind = 'address-without-handle' | 'handle-without-addresses' | 'handle-count-mismatch'

export interface NodeRepairOptions {
  readonly ipam: Ipam
  readonly node: string
  /** Whether a request for this handle is queued or running now. */
  readonly busy: (handle: string) => boolean
  readonly graceMs: number
  readonly now?: () => number
  /**
   * The ifaliases of this node's links, where a pod's host veth records its attachment (an address whose
   * handle one names is live: its handle is rebuilt, not freed). By default read from the links.
   */
  readonly liveAliases?: () => Promise<Iterable<string>>
  readonly log?: (msg: string, fields: Record<string, unknown>) => void
  /**
   * The blocks as the agent's watched view holds them, so the periodic pass reads no block; without it the pass
   * reads this node's affinities and their blocks.
   */
  readonly blocks?: () => Iterable<AllocationBlock>
  /** How often the pass that reads every handle of the cluster runs (default a day), its first at a random point within it. */
  readonly fullEveryMs?: number
}

/** A day: a handle record holding no address costs only its own record, so finding it may wait. */
const FULL_EVERY_MS = 24 * 3600_000

interface Sighting {
  readonly fingerprint: string
  readonly since: number
}

export class NodeIpamRepair {
  /** Repairs done, by kind, since start. */
  readonly repaired: Record<RepairKind, number> = { 'address-without-handle': 0, 'handle-without-addresses': 0, 'handle-count-mismatch': 0 }
  failures = 0
  private readonly seen = new Map<string, Sighting>()
  private readonly now: () => number
  private timer: ReturnType<typeof setTimeout> | undefined
  private running: Promise<void> | undefined
  private again = false
  private stopped = false
  /** Per handle, its allocations in this node's blocks as last found in agreement with its record (checkOwnBlocks). */
  private readonly verified = new Map<string, string>()
  private nextFull: number
  /** Passes run, by kind, since start. */
  readonly passes = { own: 0, full: 0 }

  constructor(private readonly options: NodeRepairOptions) {
    this.now = options.now ?? Date.now
    this.nextFull = this.now() + Math.random() * (options.fullEveryMs ?? FULL_EVERY_MS)
  }

  /**
   * Runs every `intervalMs` (this node's records only; the pass over every handle when its time has come), and
   * sooner (after 2 s) while the datastore does not answer.
   */
  start(intervalMs: number): void {
    const loop = (ms: number): void => {
      if (this.stopped) return
      this.timer = setTimeout(() => {
        const full = this.now() >= this.nextFull
        void this.trigger(full).then((ok) => {
          if (ok && full) this.nextFull = this.now() + (this.options.fullEveryMs ?? FULL_EVERY_MS)
          loop(ok ? intervalMs : Math.min(intervalMs, 2000))
        })
      }, ms)
      this.timer.unref()
    }
    loop(intervalMs)
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.running
  }

  /**
   * A run now (the datastore came back, say), of this node's records only unless `full`; calls during a run
   * coalesce into one more. True when it completed.
   */
  async trigger(full = false): Promise<boolean> {
    if (this.running !== undefined) {
      this.again = true
      await this.running
      return true
    }
    let ok = true
    this.running = (async () => {
      do {
        this.again = false
        try {
          await this.run({ full })
        } catch (err) {
          ok = false
          this.options.log?.('IPAM repair of this node failed', { err: (err as Error).message })
        }
      } while (this.again && !this.stopped)
    })().finally(() => {
      this.running = undefined
    })
    await this.running
    return ok
  }

  /** This node's blocks: from the watched view when there is one, else read through its affinities. */
  private async ownBlocks(): Promise<AllocationBlock[]> {
    const { ipam, node, blocks } = this.options
    const mine = (b: AllocationBlock): boolean => b.affinity === hostAffinity(node)
    if (blocks !== undefined) return [...blocks()].filter(mine)
    const out: AllocationBlock[] = []
    for (const a of await ipam.affinities(node)) {
      const kv = await ipam.store.get(blockKey(readCidr(a.cidr, 'affinity.cidr')))
      const b = kv === undefined ? undefined : decodeBlock(kv.key, kv.value)
      if (b !== undefined && mine(b)) out.push(b)
    }
    return out
  }

  /**
   * One pass: the check, then the repairs now due. Returns what it repaired. `full` (the default) checks every
   * record of the cluster; without it, only this node's blocks and the handles they name, which cannot find a
   * handle record with no address.
   */
  async run(opts: { readonly full?: boolean } = {}): Promise<{ kind: RepairKind; key: string }[]> {
    const { ipam, node } = this.options
    const full = opts.full ?? true
    const now = this.now()
    const own = new Set<string>()
    let problems: readonly Problem[]
    if (full) {
      for (const kv of (await ipam.store.list(BLOCKS_PREFIX)).items) {
        const b = decodeBlock(kv.key, kv.value)
        if (b.affinity === hostAffinity(node)) own.add(b.cidr)
      }
      problems = (await checkIpam(ipam)).problems
      this.passes.full++
    } else {
      const blocks = await this.ownBlocks()
      for (const b of blocks) own.add(b.cidr)
      problems = await checkOwnBlocks(ipam, blocks, this.verified)
      this.passes.own++
    }
    const candidates: { key: string; fingerprint: string; handle: string | null; problem: Problem }[] = []
    for (const p of problems) {
      if (p.kind === 'address-without-handle' && own.has(p.block)) {
        candidates.push({ key: `addr ${p.address}`, fingerprint: `${p.handle ?? ''} ${p.sequenceNumber}`, handle: p.handle, problem: p })
      } else if (p.kind === 'handle-without-addresses') {
        const kv = await ipam.store.get(handleKey(p.handle))
        if (kv !== undefined && Object.keys(decodeHandle(kv.key, kv.value).blocks).some((b) => own.has(b))) {
          candidates.push({ key: `handle ${p.handle}`, fingerprint: String(kv.revision), handle: p.handle, problem: p })
        }
      } else if (p.kind === 'handle-count-mismatch' && [...Object.keys(p.recorded), ...Object.keys(p.actual)].some((b) => own.has(b))) {
        candidates.push({ key: `counts ${p.handle}`, fingerprint: JSON.stringify([p.recorded, p.actual]), handle: p.handle, problem: p })
      }
    }
    const current = new Set(candidates.map((c) => c.key))
    // A pass of this node's records cannot see a handle with no address: one seen by the last full pass stays.
    for (const k of this.seen.keys()) if (!current.has(k) && (full || !k.startsWith('handle '))) this.seen.delete(k)
    const done: { kind: RepairKind; key: string }[] = []
    for (const c of candidates) {
      const prev = this.seen.get(c.key)
      // A request on the handle now, or a change since the last sighting: the grace starts over.
      if (prev === undefined || prev.fingerprint !== c.fingerprint || (c.handle !== null && this.options.busy(c.handle))) {
        this.seen.set(c.key, { fingerprint: c.fingerprint, since: now })
        continue
      }
      if (now - prev.since < this.options.graceMs) continue
      this.seen.delete(c.key)
      try {
        const kind = await this.repair(c.problem)
        if (kind !== undefined) {
          this.repaired[kind]++
          done.push({ kind, key: c.key })
        }
      } catch (err) {
        this.failures++
        this.options.log?.('IPAM repair failed', { problem: c.key, err: (err as Error).message })
      }
    }
    return done
  }

  private async repair(p: Problem): Promise<RepairKind | undefined> {
    const { ipam, log } = this.options
    switch (p.kind) {
      case 'address-without-handle': {
        const handle = p.handle
        if (handle !== null && [...(await this.liveAliases())].some((alias) => aliasNames(alias, handle))) {
          // Its pod is wired here: give the address its handle back, so the pod's DEL frees it.
          await ipam.adjustHandle(handle, (blocks) => void (blocks[p.block] = (blocks[p.block] ?? 0) + 1))
          log?.('IPAM repair: rebuilt the handle of a live pod\'s address', { address: p.address, handle })
          return p.kind
        }
        // By sequence number: an address reused since the check is never freed.
        const r = await ipam.releaseIPs([{ address: p.address, ...(p.handle === null ? {} : { handle: p.handle }), sequenceNumber: p.sequenceNumber }], false)
        if (r.released.length === 0) return undefined
        log?.('IPAM repair: released an address no handle record names', { address: p.address, handle: p.handle })
        return p.kind
      }
      case 'handle-without-addresses': {
        // Only as the check saw it: a write since then makes this a conflict, not a deletion.
        await ipam.store.delete(handleKey(p.handle), p.revision)
        log?.('IPAM repair: deleted a handle record with no address', { handle: p.handle })
        return p.kind
      }
      case 'handle-count-mismatch':
        await ipam.adjustHandle(p.handle, (blocks) => {
          for (const k of Object.keys(blocks)) delete blocks[k]
          Object.assign(blocks, p.actual)
        })
        log?.('IPAM repair: set a handle record to what its blocks hold', { handle: p.handle, recorded: p.recorded, actual: p.actual })
        return p.kind
      default:
        return undefined
    }
  }

  private async liveAliases(): Promise<Iterable<string>> {
    return (await this.options.liveAliases?.()) ?? (await readAliases()).values()
  }
}
