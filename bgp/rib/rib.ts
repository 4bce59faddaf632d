// The speaker's routing tables: Adj-RIB-In (each peer's accepted paths, kept inside the per-prefix
// destinations), the Loc-RIB (each destination's settled best) and the per-peer Adj-RIB-Outs it
// feeds. Pure and synchronous: sessions call in, flush() hands the changes out. No sockets, no clocks.
// A destination is an index into the columns of a DestinationTable; a prefix's only path from a peer is
// kept there as (source, attributes), and becomes a Path object only when read or joined by another.

import { familyKey } from '../codec/constants.js'
import { AttributeInterner, type InternedAttributes } from '../codec/intern.js'
import { parseIpv4 } from '../codec/ip.js'
import type { PathAttributes } from '../codec/attributes.js'
import { ipv4Prefix, ipv4PrefixList, type Ipv4Prefixes, type Prefix } from '../codec/nlri.js'
import { decide, DEFAULT_LOCAL_PREF, REASONS, type DecisionContext } from './best-path.js'
import { exportKey, newExportCache, PeerRibOut, type ExportCache, type RibView } from './adj-rib-out.js'
import { AFI_SHIFT, COMPACT, DIRTY, DestinationTable, MULTIPATH, REASON_MASK, STALE, UNSETTLED, type PathSource } from './table.js'
import { validateReceived, type LocalIdentity, type Refusal } from './validate.js'
import { mayExport, mayExportFrom, type ExportContext } from './export.js'
import { ImportTable, reimportOp } from './import-table.js'
import type { AdjRibOut, BestPath, FamilyKey, LocRibChange, Path, PeerSessionInfo, RibPeer, RouteContext } from './types.js'
import { DELTA_LOCAL, DELTA_NEW, LocRibDeltas, NextHopTable } from './loc-rib-delta.js'

export interface RibOptions {
  readonly localAsn: number
  readonly routerId: string
  /** Set when this speaker reflects routes (RFC 4456); usually the router id. */
  readonly clusterId?: string
  /** Keep the equal-cost set (ECMP) beside the best path. */
  readonly multipath?: boolean
  /** RFC 8212: nothing from or to an eBGP peer without a policy. Default true. */
  readonly rfc8212?: boolean
  /**
   * LOCAL_PREF of paths that carry none (default 100, RFC 4271). Calico's mesh carries priorities as
   * LOCAL_PREF = 2^31 - 1 - priority with default priority 1024: set 2147482623 to rank like Calico.
   */
  readonly defaultLocalPref?: number
  /** Addresses of this speaker besides each session's local address (refused as next hops). */
  readonly localAddresses?: Iterable<string>
}

export interface OriginateOptions {
  /** The interface the route points at, for policies matching Calico's `interface`. */
  readonly interface?: string
}

export interface PeerCounts {
  /** Prefixes announced by the peer since its session came up, accepted or not. */
  readonly received: number
  /** Paths from the peer in the Adj-RIB-In now (after validation and import policy). */
  readonly accepted: number
  /** Prefixes kept as received, before import policy (the peer has no route refresh); undefined when none are kept. */
  readonly importTable?: number
}

/** What re-running import over a peer's import table changed in its Adj-RIB-In. */
export interface ReimportResult {
  readonly announced: number
  readonly withdrawn: number
  readonly updated: number
}

/** A stored path, as an object literal so that V8 pretenures it. */
function newPath(prefix: Prefix, peer: RibPeer | undefined, session: PeerSessionInfo | undefined, attrs: InternedAttributes, stale = false): Path {
  return { prefix, peer, session, attrs, stale }
}

interface Counters {
  received: number
  accepted: number
  /** Stale paths held (graceful restart), by AFI: End-of-RIB sweeps only when there are any. */
  stale: number[]
}

const UNICAST = 1
const FROM_PEER: RouteContext = { fromPeer: true }
/** The source of this speaker's own routes. */
const LOCAL_SOURCE: PathSource = { peer: undefined, session: undefined }
const LOCAL_ATTRS: PathAttributes = { origin: 0, asPath: [] }

function sameMultipath(a: readonly Path[] | undefined, b: readonly Path[] | undefined): boolean {
  if (a === b) return true
  if (a === undefined || b === undefined || a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** The path among `paths` from this peer (undefined: our own) with this path id. */
function findPath(paths: Path | Path[] | undefined, peerId: number | undefined, pathId: number): Path | undefined {
  if (paths === undefined) return undefined
  if (!Array.isArray(paths)) return paths.peer?.id === peerId && paths.prefix.pathId === pathId ? paths : undefined
  for (const x of paths) if (x.peer?.id === peerId && x.prefix.pathId === pathId) return x
  return undefined
}

/**
 * Destinations touched since a flush, each with its best path as of then: a Path object (`best`, with
 * `attrs` undefined), or a compact path's source and attributes. The arrays keep their length from flush
 * to flush and are written by index: a full table arrives in thousands of flushes.
 */
class TouchedList {
  readonly dests: number[] = []
  // Made holding a reference kind from the start, so the two lists' arrays keep one shape: a list whose
  // arrays changed kind on a first write threw away add()'s optimized code.
  readonly best: (Path | PathSource | undefined)[] = [undefined]
  readonly attrs: (InternedAttributes | undefined)[] = [undefined]
  readonly multi: (Path[] | undefined)[] = [undefined]
  length = 0

  add(d: number, best: Path | PathSource | undefined, attrs: InternedAttributes | undefined, multi: Path[] | undefined): void {
    const i = this.length++
    this.dests[i] = d
    this.best[i] = best
    this.attrs[i] = attrs
    this.multi[i] = multi
  }

  /**
   * Runs of destinations made since the flush, as pairs from, to (flattened): a section's new prefixes,
   * none held by any Adj-RIB-Out and none with a best path before. A dump's sections each continue the
   * last run, so a flush meets one run where it met 12k entries.
   */
  readonly runs: number[] = []

  /** New destinations [from, to). */
  addNew(from: number, to: number): void {
    if (from === to) return
    const runs = this.runs
    if (runs.length > 0 && runs[runs.length - 1] === from) runs[runs.length - 1] = to
    else runs.push(from, to)
  }

  /**
   * Without its first `n` entries and first `r` run bounds (those after move to the front), holding no path
   * of theirs alive.
   */
  dropFirst(n: number, r: number): void {
    this.runs.splice(0, r)
    const rest = this.length - n
    for (let i = 0; i < rest; i++) {
      this.dests[i] = this.dests[n + i]!
      this.best[i] = this.best[n + i]
      this.attrs[i] = this.attrs[n + i]
      this.multi[i] = this.multi[n + i]
    }
    this.best.fill(undefined, rest, this.length)
    this.attrs.fill(undefined, rest, this.length)
    this.multi.fill(undefined, rest, this.length)
    this.length = rest
  }
}

export class Rib implements RibView {
  private readonly interner = new AttributeInterner()
  private readonly table = new DestinationTable(this.interner)
  private readonly decision: DecisionContext
  private readonly identity: LocalIdentity
  readonly exportContext: ExportContext
  private readonly multipath: boolean
  private readonly listeners = new Set<(changes: readonly LocRibChange[]) => void>()
  private readonly deltaListeners = new Set<(deltas: LocRibDeltas) => void>()
  /** The next hops the Loc-RIB's deltas name by id. */
  readonly nextHops = new NextHopTable()
  private readonly deltas = new LocRibDeltas(this.nextHops)
  private readonly outs = new Map<number, PeerRibOut>()
  /** Export results by exportKey: a few keys (iBGP clients, each eBGP AS), not one per peer. */
  private readonly exportCaches = new Map<string, ExportCache>()
  /** The same Adj-RIB-Outs as an array: flush() walks it once per changed prefix. */
  private outList: PeerRibOut[] = []
  private readonly counters = new Map<number, Counters>()
  private readonly interfaces = new WeakMap<Path, string>()
  /** Each peer's current source (peer and session), shared by the paths of its session. */
  private readonly sources = new Map<number, PathSource>()
  /** The multipath set of each destination that has one (flagged MULTIPATH in its bits). */
  private readonly multipaths = new Map<number, Path[]>()
  // Destinations touched since the last flush, with their best path as of that flush. One list for good:
  // two swapped at each flush made the first flush of a table dump the first reassignment of the fields,
  // and V8 threw away the ingest code it was compiling on the assumption that they never change.
  private readonly touched = new TouchedList()
  /** The routes as received of each peer whose RibPeer asks for an import table, with their session. */
  private readonly importTables = new Map<number, { readonly table: ImportTable; session: PeerSessionInfo }>()

  constructor(opts: RibOptions) {
    const id = parseIpv4(opts.routerId)
    if (id === undefined) throw new Error(`routerId ${JSON.stringify(opts.routerId)} is not an IPv4 address`)
    if (opts.clusterId !== undefined && parseIpv4(opts.clusterId) === undefined) {
      throw new Error(`clusterId ${JSON.stringify(opts.clusterId)} is not an IPv4 address`)
    }
    const defaultLocalPref = opts.defaultLocalPref ?? DEFAULT_LOCAL_PREF
    this.decision = { localAsn: opts.localAsn, routerId: id, defaultLocalPref }
    this.identity = { routerId: opts.routerId, clusterId: opts.clusterId, addresses: new Set(opts.localAddresses ?? []) }
    this.exportContext = { clusterId: opts.clusterId, rfc8212: opts.rfc8212 ?? true, defaultLocalPref }
    this.multipath = opts.multipath ?? false
  }

  /** Destinations in the table: those emptied since the last flush, and those an Adj-RIB-Out has yet to withdraw, included. */
  get size(): number {
    return this.table.size
  }

  /** Distinct attribute sets held. */
  get attributeSets(): number {
    return this.interner.size
  }

  private countersOf(peer: RibPeer): Counters {
    let c = this.counters.get(peer.id)
    if (c === undefined) this.counters.set(peer.id, (c = { received: 0, accepted: 0, stale: [0, 0, 0] }))
    return c
  }

  /**
   * One UPDATE section from `peer`: `attrs` undefined withdraws `prefixes`. Returns why the section
   * was not accepted (its prefixes are then treated as withdrawn), or undefined.
   */
  receive(
    peer: RibPeer,
    session: PeerSessionInfo,
    prefixes: readonly Prefix[],
    attrs: PathAttributes | undefined,
    nextHop?: readonly string[],
  ): Refusal | undefined {
    const c = this.countersOf(peer)
    const kept = peer.importTable === true ? this.importTableOf(peer, session) : undefined
    if (attrs === undefined) {
      for (const p of prefixes) this.removePath(peer.id, p, c)
      if (kept !== undefined) for (const p of prefixes) kept.delete(p)
      return undefined
    }
    c.received += prefixes.length
    const hops = nextHop ?? []
    let clean: PathAttributes | Refusal
    // The section's set as kept in the import table: the same set the import takes when the policy passes it.
    let pre: InternedAttributes | undefined
    if (kept === undefined) clean = this.admit(peer, attrs, nextHop)
    else {
      // Kept after validation and before the import policy (RFC 8212 is policy: a policy added later
      // brings those back).
      const verdict = validateReceived(attrs, peer, this.identity, nextHop)
      if (verdict.ok) {
        pre = this.interner.intern(verdict.attrs, hops)
        for (const p of prefixes) kept.set(p, pre)
        clean = this.noPolicy(peer) ?? verdict.attrs
      } else {
        for (const p of prefixes) kept.delete(p)
        clean = { kind: verdict.kind, reason: verdict.reason }
      }
    }
    if ('kind' in clean) {
      if (pre !== undefined) this.interner.release(pre)
      for (const p of prefixes) this.removePath(peer.id, p, c)
      return clean
    }
    this.importSection(peer, this.sourceOf(peer, session), prefixes, clean, hops, c, pre)
    if (pre !== undefined) this.interner.release(pre)
    return undefined
  }

  /**
   * The import policy over a validated section: each prefix stored, changed or refused. `interned`: `clean`
   * interned already (the caller's reference).
   */
  private importSection(peer: RibPeer, source: PathSource, prefixes: readonly Prefix[], clean: PathAttributes, hops: readonly string[], c: Counters, interned?: InternedAttributes): void {
    const policy = peer.importPolicy
    // Interned once for the whole section: the hot path for a full table.
    let shared: InternedAttributes | undefined = interned
    if (shared !== undefined) shared.refs++
    const perPrefix = policy !== undefined && policy.passesAll !== true ? policy : undefined
    for (const p of prefixes) {
      if (perPrefix !== undefined) {
        const r = perPrefix.apply(p, clean, peer, FROM_PEER)
        if (r === undefined) {
          this.removePath(peer.id, p, c)
          continue
        }
        if (r !== clean) {
          const own = this.interner.intern(r, hops)
          this.setPath(source, p, own, c)
          this.interner.release(own)
          continue
        }
      }
      shared ??= this.interner.intern(clean, hops)
      this.setPath(source, p, shared, c)
    }
    if (shared !== undefined) this.interner.release(shared)
  }

  private importTableOf(peer: RibPeer, session: PeerSessionInfo): ImportTable {
    const known = this.importTables.get(peer.id)
    if (known !== undefined) {
      known.session = session
      return known.table
    }
    const table = new ImportTable(this.interner)
    this.importTables.set(peer.id, { table, session })
    return table
  }

  /**
   * Import runs again over the peer's import table (its import policy changed and it cannot re-send):
   * newly accepted prefixes appear, newly refused ones go, changed attributes are replaced. The caller
   * flushes. Nothing happens for a peer without an import table.
   */
  reimport(peer: RibPeer): ReimportResult {
    const kept = this.importTables.get(peer.id)
    const result = { announced: 0, withdrawn: 0, updated: 0 }
    if (kept === undefined || peer.importTable !== true) return result
    const c = this.countersOf(peer)
    const source = this.sourceOf(peer, kept.session)
    const refused = this.noPolicy(peer) !== undefined
    const policy = peer.importPolicy
    const perPrefix = policy !== undefined && policy.passesAll !== true ? policy : undefined
    kept.table.forEach((p, pre) => {
      const next = refused ? undefined : perPrefix === undefined ? pre.attrs : perPrefix.apply(p, pre.attrs, peer, FROM_PEER)
      const op = reimportOp(this.heldFrom(peer.id, p)?.attrs, next)
      if (op === 'keep') return
      if (op === 'withdraw') {
        this.removePath(peer.id, p, c)
        result.withdrawn++
        return
      }
      if (op === 'announce') result.announced++
      else result.updated++
      if (next === pre.attrs) this.setPath(source, p, pre, c)
      else {
        const own = this.interner.intern(next!, pre.nextHop)
        this.setPath(source, p, own, c)
        this.interner.release(own)
      }
    })
    return result
  }

  /** The attributes of the path from this peer for `p` in the Adj-RIB-In, or undefined. */
  private heldFrom(peerId: number, p: Prefix): InternedAttributes | undefined {
    const t = this.table
    const d = t.get(p)
    if (d < 0) return undefined
    if ((t.bits[d]! & COMPACT) !== 0) return p.pathId === 0 && t.source.get(d)!.peer?.id === peerId ? t.attrs.get(d) : undefined
    return findPath(t.paths.get(d), peerId, p.pathId)?.attrs
  }

  /**
   * receive() for IPv4 prefixes without path identifiers as columns, the hot path of a table dump. New
   * destinations take consecutive indices (when none freed waits to be reused), so a section's new
   * prefixes are one range: the loop only finds or makes each destination, and their paths are stored
   * afterwards with a few bulk writes (what setPath and touch do for a prefix's first path from a peer),
   * with no object made for any of them. A prefix already held takes setPath; anything else (freed
   * indices to reuse, an import policy that may change or refuse a prefix, a withdrawal) goes the way of
   * receive().
   */
  receiveIpv4(peer: RibPeer, session: PeerSessionInfo, prefixes: Ipv4Prefixes, attrs: PathAttributes | undefined, nextHop?: readonly string[]): Refusal | undefined {
    const policy = peer.importPolicy
    const t = this.table
    if (attrs === undefined || (policy !== undefined && policy.passesAll !== true) || !t.appendOnly || peer.importTable === true) {
      return this.receive(peer, session, ipv4PrefixList(prefixes), attrs, nextHop)
    }
    const c = this.countersOf(peer)
    const { count, addr, len } = prefixes
    c.received += count
    const clean = this.admit(peer, attrs, nextHop)
    if ('kind' in clean) {
      for (let i = 0; i < count; i++) this.removePath(peer.id, ipv4Prefix(addr[i]! >>> 0, len[i]!), c)
      return clean
    }
    const shared = this.interner.intern(clean, nextHop ?? [])
    const source = this.sourceOf(peer, session)
    const from = t.used
    const held: number[] = []
    t.obtainIpv4Run(addr, len, count, held)
    const to = t.used
    // Held before the section: the general way.
    for (const i of held) this.setPath(source, ipv4Prefix(addr[i]! >>> 0, len[i]!), shared, c)
    t.storeCompact(from, to, source, shared)
    this.touched.addNew(from, to)
    shared.refs += to - from
    c.accepted += to - from
    this.interner.release(shared)
    return undefined
  }

  /**
   * The attributes of an UPDATE section from `peer` as the RIB keeps them (validated, cleaned), or why the
   * section is refused.
   */
  private admit(peer: RibPeer, attrs: PathAttributes, nextHop: readonly string[] | undefined): PathAttributes | Refusal {
    const verdict = validateReceived(attrs, peer, this.identity, nextHop)
    if (!verdict.ok) return { kind: verdict.kind, reason: verdict.reason }
    return this.noPolicy(peer) ?? verdict.attrs
  }

  /** RFC 8212's refusal when `peer` is eBGP and has no import policy, else undefined. */
  private noPolicy(peer: RibPeer): Refusal | undefined {
    const policy = peer.importPolicy
    if (peer.type === 'ebgp' && this.exportContext.rfc8212 && (policy === undefined || policy.empty)) return { kind: 'rfc8212', reason: 'RFC 8212: no import policy for an eBGP peer' }
    return undefined
  }

  /** The source of paths from `peer` over `session`: the same object for as long as the session lasts. */
  private sourceOf(peer: RibPeer, session: PeerSessionInfo): PathSource {
    const known = this.sources.get(peer.id)
    if (known !== undefined && known.peer === peer && known.session === session) return known
    const made: PathSource = { peer, session }
    this.sources.set(peer.id, made)
    return made
  }

  /** Stores a path; `attrs` is held by the caller, the stored path takes its own reference. */
  private setPath(source: PathSource, p: Prefix, attrs: InternedAttributes, c: Counters | undefined): void {
    const t = this.table
    const d = t.obtain(p)
    const bits = t.bits[d]!
    const { peer, session } = source
    if ((bits & COMPACT) !== 0) {
      const held = t.source.get(d)!
      if (p.pathId === 0 && held.peer?.id === peer?.id) {
        // The same path again (a graceful restart's re-send, a route refresh): no change to anyone.
        if ((bits & STALE) !== 0 && c !== undefined) c.stale[p.afi]!--
        if (t.attrs.get(d) === attrs && held.peer === peer && held.session?.routerId === session?.routerId) {
          t.bits[d] = bits & ~STALE
          return
        }
        this.touch(d)
        attrs.refs++
        this.interner.release(t.attrs.get(d)!)
        t.source.set(d, source)
        t.attrs.set(d, attrs)
        t.bits[d]! &= ~STALE
        return
      }
      // Another path joins: the compact one becomes an object like it (with the new one's prefix object
      // when that has path id 0: one per destination).
      this.touch(d)
      this.expand(d, p.pathId === 0 ? p : t.prefix(d))
    } else if (t.paths.get(d) === undefined && p.pathId === 0 && source !== LOCAL_SOURCE) {
      // The common case: a prefix's only path, from a peer, kept as two references in the table.
      this.touch(d)
      attrs.refs++
      t.source.set(d, source)
      t.attrs.set(d, attrs)
      t.bits[d] = (t.bits[d]! & ~STALE) | COMPACT
      // A compact destination keeps no best path object (one settled before its paths went would stay).
      t.best.set(d, undefined)
      if (c !== undefined) c.accepted++
      return
    }
    const old = findPath(t.paths.get(d), peer?.id, p.pathId)
    if (old !== undefined) {
      if (old.stale && c !== undefined) c.stale[p.afi]!--
      if (old.attrs === attrs && old.peer === peer && old.session?.routerId === session?.routerId) {
        old.stale = false
        return
      }
      attrs.refs++
      this.replacePath(d, old, newPath(old.prefix, peer, session, attrs))
      this.interner.release(old.attrs)
    } else {
      attrs.refs++
      this.addPath(d, newPath(this.sharedPrefix(d, p), peer, session, attrs))
      if (c !== undefined) c.accepted++
    }
    this.touch(d)
  }

  /** `p`, or for path id 0 the prefix object a path of `d` already has: one per destination, not per path. */
  private sharedPrefix(d: number, p: Prefix): Prefix {
    if (p.pathId !== 0) return p
    const paths = this.table.paths.get(d)
    if (paths === undefined) return p
    if (!Array.isArray(paths)) return paths.prefix.pathId === 0 ? paths.prefix : p
    for (const x of paths) if (x.prefix.pathId === 0) return x.prefix
    return p
  }

  /** The compact path of `d` as an object among its paths, with `prefix` (path id 0) as its prefix. */
  private expand(d: number, prefix: Prefix): void {
    const t = this.table
    const source = t.source.get(d)!
    const bits = t.bits[d]!
    t.paths.set(d, newPath(prefix, source.peer, source.session, t.attrs.get(d)!, (bits & STALE) !== 0))
    t.source.set(d, undefined)
    t.attrs.set(d, undefined)
    t.bits[d] = bits & ~(COMPACT | STALE)
  }

  private addPath(d: number, path: Path): void {
    const paths = this.table.paths
    const p = paths.get(d)
    if (p === undefined) paths.set(d, path)
    else if (Array.isArray(p)) p.push(path)
    else paths.set(d, [p, path])
  }

  private replacePath(d: number, old: Path, path: Path): void {
    const paths = this.table.paths
    const p = paths.get(d)
    if (p === old) paths.set(d, path)
    else if (Array.isArray(p)) p[p.indexOf(old)] = path
  }

  private removePathObject(d: number, old: Path): void {
    const paths = this.table.paths
    const p = paths.get(d)
    if (p === old) paths.set(d, undefined)
    else if (Array.isArray(p)) {
      const i = p.indexOf(old)
      if (i < 0) return
      p.splice(i, 1)
      if (p.length === 1) paths.set(d, p[0])
    }
  }

  private removePath(peerId: number | undefined, p: Prefix, c: Counters | undefined): void {
    const t = this.table
    const d = t.get(p)
    if (d < 0) return
    if ((t.bits[d]! & COMPACT) !== 0) {
      if (p.pathId === 0 && t.source.get(d)!.peer?.id === peerId) this.dropCompact(d, c)
      return
    }
    const old = findPath(t.paths.get(d), peerId, p.pathId)
    if (old !== undefined) this.drop(d, old, c)
  }

  private dropCompact(d: number, c: Counters | undefined): void {
    const t = this.table
    this.touch(d)
    const bits = t.bits[d]!
    this.interner.release(t.attrs.get(d)!)
    if (c !== undefined) {
      c.accepted--
      if ((bits & STALE) !== 0) c.stale[t.afi(d)]!--
    }
    t.source.set(d, undefined)
    t.attrs.set(d, undefined)
    t.bits[d] = bits & ~(COMPACT | STALE)
  }

  private drop(d: number, path: Path, c: Counters | undefined): void {
    this.removePathObject(d, path)
    this.interner.release(path.attrs)
    if (c !== undefined) {
      c.accepted--
      if (path.stale) c.stale[path.prefix.afi]!--
    }
    this.touch(d)
  }

  /**
   * Marks `d` for the next flush, noting its best path as of the last one. Called before a compact path
   * changes (the columns are its best path), and before or after an object path changes (the settled
   * best stays until the flush settles it again).
   */
  private touch(d: number): void {
    const t = this.table
    const bits = t.bits[d]!
    if ((bits & DIRTY) === 0) {
      if ((bits & COMPACT) !== 0) this.touched.add(d, t.source.get(d), t.attrs.get(d), undefined)
      else this.touched.add(d, t.best.get(d), undefined, this.multipathOf(d))
    }
    t.bits[d] = bits | DIRTY | UNSETTLED
  }

  /** The destination with its best path computed (RibView). */
  settle(d: number): void {
    const t = this.table
    const bits = t.bits[d]!
    if ((bits & UNSETTLED) === 0) return
    const hadMultipath = (bits & MULTIPATH) !== 0
    const flags = bits & ~(UNSETTLED | REASON_MASK | MULTIPATH)
    const paths = t.paths.get(d)
    let multipath: Path[] | undefined
    if ((bits & COMPACT) !== 0 || paths === undefined) {
      // A compact path is its own best and needs no object here.
      t.best.set(d, undefined)
      t.bits[d] = flags
    } else if (!Array.isArray(paths)) {
      t.best.set(d, paths)
      t.bits[d] = flags
    } else {
      const r = decide(paths, this.decision, this.multipath)
      t.best.set(d, r.best)
      t.bits[d] = flags | r.reason
      multipath = r.multipath
    }
    if (multipath !== undefined) {
      this.multipaths.set(d, multipath)
      t.bits[d]! |= MULTIPATH
    } else if (hadMultipath) this.multipaths.delete(d)
  }

  private multipathOf(d: number): Path[] | undefined {
    return (this.table.bits[d]! & MULTIPATH) === 0 ? undefined : this.multipaths.get(d)
  }

  /** Emits the Loc-RIB changes since the last flush and queues them on every Adj-RIB-Out. */
  flush(): void {
    const list = this.touched
    const n = list.length
    const r = list.runs.length
    if (n === 0 && r === 0) return
    const changes: LocRibChange[] | undefined = this.listeners.size > 0 ? [] : undefined
    const deltas = this.deltaListeners.size > 0 ? this.deltas : undefined
    if (r > 0) this.settleRuns(list.runs, r, changes, deltas)
    if (n > 0) this.settleTouched(list, n, changes, deltas)
    // Listeners may touch destinations again: those go in after, for the next flush.
    list.dropFirst(n, r)
    if (changes !== undefined && changes.length > 0) for (const l of this.listeners) l(changes)
    if (deltas !== undefined && deltas.count > 0) {
      try {
        for (const l of this.deltaListeners) l(deltas)
      } finally {
        deltas.reset()
      }
    }
  }

  /** The settled best of `d` as one delta entry (see loc-rib-delta.ts); `flags` adds DELTA_NEW. */
  private noteDelta(out: LocRibDeltas, d: number, flags: number): void {
    const t = this.table
    const bits = t.bits[d]!
    const afi = (bits >>> AFI_SHIFT) & 3
    const family = afi === 1 ? 4 : 6
    const addr4 = afi === 1 ? t.addr4[d]! >>> 0 : 0
    const addr6 = afi === 1 ? undefined : (t.prefix(d).addr as Uint8Array)
    const len = t.len(d)
    if ((bits & COMPACT) !== 0) {
      out.addOne(family, addr4, addr6, len, flags | (t.source.get(d)!.peer === undefined ? DELTA_LOCAL : 0), t.attrs.get(d))
      return
    }
    const best = t.best.get(d)
    if (best === undefined) return out.addOne(family, addr4, addr6, len, flags, undefined)
    out.addMany(family, addr4, addr6, len, flags | (best.peer === undefined ? DELTA_LOCAL : 0), best.attrs, this.multipathOf(d) ?? [])
  }

  /** Calls `listener` with the Loc-RIB's changes of each flush as typed deltas, read during the call only. */
  subscribeDeltas(listener: (deltas: LocRibDeltas) => void): () => void {
    this.deltaListeners.add(listener)
    return () => this.deltaListeners.delete(listener)
  }

  /**
   * Every destination with a best path, as deltas in batches of up to `batch` entries (one buffer, reused
   * from batch to batch): the streaming full walk, making no Path object for a compact destination.
   */
  walkLocRib(visit: (deltas: LocRibDeltas) => void, batch = 4096): void {
    const out = new LocRibDeltas(this.nextHops)
    for (const d of this.table.indices()) {
      this.settle(d)
      const bits = this.table.bits[d]!
      if ((bits & COMPACT) === 0 && this.table.best.get(d) === undefined) continue
      this.noteDelta(out, d, 0)
      if (out.count >= batch) {
        visit(out)
        out.reset()
      }
    }
    if (out.count > 0) visit(out)
  }

  /**
   * flush()'s loop, a method of its own: V8 optimizes a long loop while it runs, and code after the loop
   * that had never run then cost a deoptimization at the end of every long flush.
   */
  private settleTouched(list: TouchedList, n: number, changes: LocRibChange[] | undefined, deltas: LocRibDeltas | undefined): void {
    const t = this.table
    const { dests, best: prevBest, attrs: prevAttrs, multi: prevMulti } = list
    const outs = this.outList
    // Whether each Adj-RIB-Out may take a compact path of `source` in `afi` (the export rules that depend
    // on the source alone): a dump's prefixes share one source, so this is worked out once per run of them.
    // A typed array: `outs.map(() => false)` made arrays of two element kinds (empty or not), and the
    // optimized loop was thrown away when a flush met the other one.
    const mayTake = new Uint8Array(outs.length)
    let source: PathSource | undefined
    let afi = 0
    for (let i = 0; i < n; i++) {
      const d = dests[i]!
      const before = prevBest[i]
      const now = t.bits[d]!
      if (before === undefined && (now & (COMPACT | MULTIPATH)) === COMPACT) {
        // No path before, one compact path now: what settle() does for it (a compact destination keeps no
        // best path object), and the best has changed.
        t.bits[d] = now & ~(DIRTY | UNSETTLED | REASON_MASK)
        if (changes !== undefined) {
          const prefix = t.prefix(d)
          changes.push({ prefix, best: this.bestOf(d, prefix), previous: undefined })
        }
        if (deltas !== undefined) this.noteDelta(deltas, d, DELTA_NEW)
        const s = t.source.get(d)!
        const f = (now >>> AFI_SHIFT) & 3
        if (s !== source || f !== afi) {
          source = s
          afi = f
          this.mayTakeFrom(f, s.peer, mayTake)
        }
        // One that may not take it and holds nothing has nothing to withdraw either: offer() would return.
        for (let k = 0; k < outs.length; k++) if (mayTake[k] !== 0 || outs[k]!.size > 0) outs[k]!.offer(d)
        continue
      }
      this.settleTouchedOne(d, before, prevAttrs[i], prevMulti[i], changes, deltas)
    }
  }

  /**
   * flush() for the runs of new destinations (the first `r` bounds of `runs`): those still holding the one
   * compact path their section gave them (a dump's every prefix) need only their flags cleared and the
   * Adj-RIB-Outs that may take them offered them; no Adj-RIB-Out holds a new destination, so one that may
   * not take it has nothing to withdraw. Any other went on to change before the flush: the general way.
   */
  private settleRuns(runs: readonly number[], r: number, changes: LocRibChange[] | undefined, deltas: LocRibDeltas | undefined): void {
    const t = this.table
    const outs = this.outList
    // Whether each Adj-RIB-Out may take a compact path of the source in the AFI (the export rules that
    // depend on the source alone), worked out again when either changes.
    const mayTake = new Uint8Array(outs.length)
    let sid = 0
    let afi = 0
    let offers = false
    for (let j = 0; j < r; j += 2) {
      const to = runs[j + 1]!
      for (let d = runs[j]!; d < to; d++) {
        const now = t.bits[d]!
        if ((now & (COMPACT | MULTIPATH)) !== COMPACT) {
          this.settleTouchedOne(d, undefined, undefined, undefined, changes, deltas)
          continue
        }
        t.bits[d] = now & ~(DIRTY | UNSETTLED | REASON_MASK)
        if (changes !== undefined) {
          const prefix = t.prefix(d)
          changes.push({ prefix, best: this.bestOf(d, prefix), previous: undefined })
        }
        if (deltas !== undefined) this.noteDelta(deltas, d, DELTA_NEW)
        const s = t.source.ids[d]!
        const f = (now >>> AFI_SHIFT) & 3
        if (s !== sid || f !== afi) {
          sid = s
          afi = f
          offers = this.mayTakeFrom(f, t.source.get(d)!.peer, mayTake)
        }
        if (offers) for (let k = 0; k < outs.length; k++) if (mayTake[k] !== 0) outs[k]!.offer(d)
      }
    }
  }

  /**
   * Sets mayTake[k] to whether the k-th Adj-RIB-Out may take a compact path from `peer` in `afi` (the export
   * rules that depend on the source alone); true when any may.
   */
  private mayTakeFrom(afi: number, peer: RibPeer | undefined, mayTake: Uint8Array): boolean {
    const outs = this.outList
    let any = false
    for (let k = 0; k < outs.length; k++) {
      mayTake[k] = mayExportFrom(afi, peer, outs[k]!.peer, this.exportContext) ? 1 : 0
      any ||= mayTake[k] !== 0
    }
    return any
  }

  /**
   * settleTouched() for any destination but a new compact one: a method of its own, so that the loops V8
   * compiles while a table dump streams in are only what the dump needs.
   */
  private settleTouchedOne(d: number, before: Path | PathSource | undefined, beforeAttrs: InternedAttributes | undefined, beforeMulti: Path[] | undefined, changes: LocRibChange[] | undefined, deltas: LocRibDeltas | undefined): void {
    const t = this.table
    this.settle(d)
    const bits = (t.bits[d]! &= ~DIRTY)
    if (!this.sameBest(d, bits, before, beforeAttrs, beforeMulti)) {
      if (changes !== undefined) {
        const prefix = t.prefix(d)
        const previous = beforeAttrs === undefined ? (before as Path | undefined) : newPath(prefix, before!.peer, before!.session, beforeAttrs)
        changes.push({ prefix, best: this.bestOf(d, prefix), previous })
      }
      if (deltas !== undefined) this.noteDelta(deltas, d, before === undefined ? DELTA_NEW : 0)
      const outs = this.outList
      for (let k = 0; k < outs.length; k++) outs[k]!.offer(d)
    }
    if (t.isEmpty(d)) t.release(d)
  }

  /**
   * Whether `d`'s settled best is the one noted before (`attrs` set: a compact path's source and
   * attributes; else a Path object). By content: a compact path that became an object when another
   * joined is still the same path.
   */
  private sameBest(d: number, bits: number, before: Path | PathSource | undefined, attrs: InternedAttributes | undefined, multi: Path[] | undefined): boolean {
    const t = this.table
    if ((bits & COMPACT) !== 0) {
      const source = t.source.get(d)!
      if (attrs !== undefined) return before === source && attrs === t.attrs.get(d)
      const b = before as Path | undefined
      return b !== undefined && b.prefix.pathId === 0 && b.peer === source.peer && b.session === source.session && b.attrs === t.attrs.get(d) && multi === undefined
    }
    const best = t.best.get(d)
    if (!sameMultipath(this.multipathOf(d), multi)) return false
    if (attrs === undefined) return best === before
    return best !== undefined && best.prefix.pathId === 0 && best.peer === before!.peer && best.session === before!.session && best.attrs === attrs
  }

  subscribe(listener: (changes: readonly LocRibChange[]) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** A route of our own: ORIGIN IGP, empty AS_PATH, next hop filled per peer on export. */
  originate(prefix: Prefix, attrs?: Partial<PathAttributes>, opts?: OriginateOptions): void {
    const own = this.interner.intern({ ...LOCAL_ATTRS, ...attrs })
    const p = prefix.pathId === 0 ? prefix : { ...prefix, pathId: 0 }
    this.setPath(LOCAL_SOURCE, p, own, undefined)
    this.interner.release(own)
    const d = this.table.get(p)
    const path = d < 0 ? undefined : findPath(this.table.paths.get(d), undefined, 0)
    if (path !== undefined) {
      if (opts?.interface !== undefined) this.interfaces.set(path, opts.interface)
      else this.interfaces.delete(path)
    }
  }

  withdrawOrigin(prefix: Prefix): void {
    this.removePath(undefined, prefix.pathId === 0 ? prefix : { ...prefix, pathId: 0 }, undefined)
  }

  /**
   * RFC 4724 helper: the peer's session went down. Paths of the families in `keepStale` stay, marked
   * stale, until End-of-RIB or sweepStale(); the others go now.
   */
  peerDown(peer: RibPeer, keepStale: ReadonlySet<FamilyKey>): void {
    const c = this.countersOf(peer)
    c.received = 0
    // The next session sends its table again, stale paths or not: what this one sent is no longer its word.
    this.importTables.get(peer.id)?.table.clear()
    this.importTables.delete(peer.id)
    const t = this.table
    for (const d of t.indices()) {
      const afi = t.afi(d)
      const keep = keepStale.has(familyKey(afi, UNICAST))
      const bits = t.bits[d]!
      if ((bits & COMPACT) !== 0) {
        if (t.source.get(d)!.peer?.id !== peer.id) continue
        if (!keep) this.dropCompact(d, c)
        else if ((bits & STALE) === 0) {
          t.bits[d] = bits | STALE
          c.stale[afi]!++
        }
        continue
      }
      for (const path of this.pathsOf(d, peer.id)) {
        if (!keep) this.drop(d, path, c)
        else if (!path.stale) {
          path.stale = true
          c.stale[afi]!++
        }
      }
    }
  }

  /** RFC 4724 §4.2: End-of-RIB from the restarted peer; what it did not re-send is gone. */
  endOfRib(peer: RibPeer, family: FamilyKey): void {
    this.removeStale(peer, family >> 8)
  }

  /** The restart timer expired: every stale path of the peer goes. */
  sweepStale(peer: RibPeer): void {
    this.removeStale(peer, undefined)
  }

  private removeStale(peer: RibPeer, afi: number | undefined): void {
    const c = this.countersOf(peer)
    // A session that did not restart (the common End-of-RIB) holds nothing stale: no walk over the table.
    if ((afi === undefined ? c.stale[1]! + c.stale[2]! : (c.stale[afi] ?? 0)) === 0) return
    const t = this.table
    for (const d of t.indices(afi)) {
      const bits = t.bits[d]!
      if ((bits & COMPACT) !== 0) {
        if ((bits & STALE) !== 0 && t.source.get(d)!.peer?.id === peer.id) this.dropCompact(d, c)
        continue
      }
      for (const path of this.pathsOf(d, peer.id)) if (path.stale) this.drop(d, path, c)
    }
  }

  /** The path objects of `d` from this peer (not a compact path). */
  private pathsOf(d: number, peerId: number): Path[] {
    const p = this.table.paths.get(d)
    if (p === undefined) return []
    if (!Array.isArray(p)) return p.peer?.id === peerId ? [p] : []
    return p.filter((x) => x.peer?.id === peerId)
  }

  /** Every path of `d`, a compact one as a new object. */
  private pathList(d: number): Path[] {
    const t = this.table
    if ((t.bits[d]! & COMPACT) !== 0) return [this.bestPath(d)!]
    const p = t.paths.get(d)
    return p === undefined ? [] : Array.isArray(p) ? [...p] : [p]
  }

  /** The settled best path of `d` (RibView): a compact path as a new object, with `prefix` if given. */
  bestPath(d: number, prefix?: Prefix): Path | undefined {
    const t = this.table
    const bits = t.bits[d]!
    if ((bits & COMPACT) === 0) return t.best.get(d)
    const source = t.source.get(d)!
    return newPath(prefix ?? t.prefix(d), source.peer, source.session, t.attrs.get(d)!, (bits & STALE) !== 0)
  }

  bestPeer(d: number): RibPeer | undefined {
    const t = this.table
    return (t.bits[d]! & COMPACT) !== 0 ? t.source.get(d)!.peer : t.best.get(d)?.peer
  }

  bestSession(d: number): PeerSessionInfo | undefined {
    const t = this.table
    return (t.bits[d]! & COMPACT) !== 0 ? t.source.get(d)!.session : t.best.get(d)?.session
  }

  bestAttrs(d: number): InternedAttributes | undefined {
    const t = this.table
    return (t.bits[d]! & COMPACT) !== 0 ? t.attrs.get(d) : t.best.get(d)?.attrs
  }

  private bestOf(d: number, prefix?: Prefix): BestPath | undefined {
    const best = this.bestPath(d, prefix)
    if (best === undefined) return undefined
    return { path: best, reason: REASONS[this.table.bits[d]! & REASON_MASK]!, multipath: this.multipathOf(d) ?? [best] }
  }

  best(prefix: Prefix): BestPath | undefined {
    const d = this.table.get(prefix)
    if (d < 0) return undefined
    this.settle(d)
    return this.bestOf(d)
  }

  /** Every path of the prefix, best or not. */
  paths(prefix: Prefix): readonly Path[] {
    const d = this.table.get(prefix)
    return d < 0 ? [] : this.pathList(d)
  }

  *locRib(): IterableIterator<[Prefix, BestPath]> {
    for (const d of this.table.indices()) {
      this.settle(d)
      const best = this.bestOf(d)
      if (best !== undefined) yield [this.table.prefix(d), best]
    }
  }

  /** The prefix of every destination (those emptied since the last flush included). */
  *prefixes(): IterableIterator<Prefix> {
    for (const d of this.table.indices()) yield this.table.prefix(d)
  }

  *adjRibIn(peer: RibPeer): IterableIterator<Path> {
    for (const d of this.table.indices()) for (const p of this.pathList(d)) if (p.peer?.id === peer.id) yield p
  }

  counts(peer: RibPeer): PeerCounts {
    const c = this.counters.get(peer.id)
    const kept = this.importTables.get(peer.id)
    return { received: c?.received ?? 0, accepted: c?.accepted ?? 0, ...(kept !== undefined || peer.importTable === true ? { importTable: kept?.table.size ?? 0 } : {}) }
  }

  /** The session reached Established: its Adj-RIB-Out starts with the whole Loc-RIB queued. */
  attachPeer(peer: RibPeer): AdjRibOut {
    this.outs.get(peer.id)?.clear()
    const out = new PeerRibOut(peer, this)
    this.outs.set(peer.id, out)
    this.outList = [...this.outs.values()]
    for (const d of this.table.indices()) {
      this.settle(d)
      out.offer(d)
    }
    return out
  }

  detachPeer(peer: RibPeer): void {
    this.outs.get(peer.id)?.clear()
    this.outs.delete(peer.id)
    this.sources.delete(peer.id)
    this.outList = [...this.outs.values()]
  }

  // RibView, for the Adj-RIB-Outs.

  exportCache(target: RibPeer): ExportCache {
    const key = exportKey(target)
    let c = this.exportCaches.get(key)
    if (c === undefined) this.exportCaches.set(key, (c = newExportCache()))
    return c
  }

  isLive(d: number): boolean {
    return this.table.isLive(d)
  }

  prefix(d: number): Prefix {
    return this.table.prefix(d)
  }

  afi(d: number): 1 | 2 {
    return this.table.afi(d)
  }

  indices(afi?: number): Iterable<number> {
    return this.table.indices(afi)
  }

  /** Whether `d`'s settled best may go to `target` at all (family, split horizon, RFC 8212), policy aside. */
  exportable(d: number, target: RibPeer): boolean {
    const t = this.table
    if ((t.bits[d]! & COMPACT) !== 0) return mayExportFrom(t.afi(d), t.source.get(d)!.peer, target, this.exportContext)
    const best = t.best.get(d)
    return best !== undefined && mayExport(best, target, this.exportContext)
  }

  hold(d: number): void {
    this.table.hold(d)
  }

  /** An Adj-RIB-Out withdrew or forgot `d`: an emptied destination nobody holds is freed. */
  unhold(d: number): void {
    if (this.table.unhold(d)) this.table.release(d)
  }

  interfaceOf(path: Path): string | undefined {
    return this.interfaces.get(path)
  }
}
