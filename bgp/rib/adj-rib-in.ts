// The Adj-RIB-In side: each section a peer sends is validated, refused (RFC 8212) or passed through the
// import policy into the destination table; per peer it counts, keeps the import table, and drops or marks
// stale its paths when the session ends (RFC 4724). It decides no best path and tells no listener.

import { familyKey } from '../codec/constants.js'
import type { AttributeInterner, InternedAttributes } from '../codec/intern.js'
import type { PathAttributes } from '../codec/attributes.js'
import { ipv4Prefix, ipv4PrefixList, ipv6Prefix, ipv6PrefixList, type Ipv4Prefixes, type Ipv6Prefixes, type Prefix } from '../codec/nlri.js'
import { PATH_ADDED, PATH_REMOVED, PATH_WAS_STALE, type Destinations, type PathSource } from './destinations.js'
import { validateReceived, type LocalIdentity, type Refusal } from './validate.js'
import { ImportTable, reimportOp } from './import-table.js'
import type { FamilyKey, PeerSessionInfo, Policy, RibPeer, RouteContext } from './types.js'

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

interface Counters {
  received: number
  accepted: number
  /** Stale paths held (graceful restart), by AFI: End-of-RIB sweeps only when there are any. */
  stale: number[]
}

const FROM_PEER: RouteContext = { fromPeer: true }

/** Whether `policy` passes every network of the section unchanged by its passesIpv4 (a pool guard's). */
function passesSection(policy: Policy, prefixes: Ipv4Prefixes): boolean {
  const passes = policy.passesIpv4
  if (passes === undefined) return false
  const { count, addr, len } = prefixes
  for (let i = 0; i < count; i++) if (!passes(addr[i]!, len[i]!)) return false
  return true
}
/** passesSection() for IPv6 networks, by the policy's passesIpv6. */
function passesSection6(policy: Policy, prefixes: Ipv6Prefixes): boolean {
  const passes = policy.passesIpv6
  if (passes === undefined) return false
  const { count, addr, len } = prefixes
  for (let i = 0; i < count; i++) if (!passes(addr, i * 16, len[i]!)) return false
  return true
}

const FAMILIES = [1, 2] as const
const UNICAST = 1

export class AdjRibIn {
  private readonly counters = new Map<number, Counters>()
  /** Each peer's current source (peer and session), shared by the paths of its session. */
  private readonly sources = new Map<number, PathSource>()
  /** The routes as received of each peer whose RibPeer asks for an import table, with their session. */
  private readonly importTables = new Map<number, { readonly table: ImportTable; session: PeerSessionInfo }>()

  constructor(
    private readonly table: Destinations,
    private readonly interner: AttributeInterner,
    private readonly identity: LocalIdentity,
    /** RFC 8212: refuse what an eBGP peer without an import policy sends. */
    private readonly rfc8212: boolean,
  ) {}

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
   * receive() for IPv4 prefixes without path identifiers as columns, the hot path of a table dump: the
   * section's new prefixes are stored in one run (Destinations.addRun), those held before one by one. A
   * section that needs more (an import policy that may change or refuse a prefix, an import table, a
   * withdrawal, a table reusing freed destinations) goes the way of receive().
   */
  receiveIpv4(peer: RibPeer, session: PeerSessionInfo, prefixes: Ipv4Prefixes, attrs: PathAttributes | undefined, nextHop?: readonly string[]): Refusal | undefined {
    const policy = peer.importPolicy
    if (attrs === undefined || (policy !== undefined && policy.passesAll !== true && !passesSection(policy, prefixes)) || !this.table.runsAppend || peer.importTable === true) {
      return this.receive(peer, session, ipv4PrefixList(prefixes), attrs, nextHop)
    }
    return this.receiveRun(peer, session, prefixes, (i) => ipv4Prefix(prefixes.addr[i]! >>> 0, prefixes.len[i]!), attrs, nextHop)
  }

  /** receiveIpv4() for IPv6 prefixes without path identifiers as columns (MP_REACH_NLRI of a table dump). */
  receiveIpv6(peer: RibPeer, session: PeerSessionInfo, prefixes: Ipv6Prefixes, attrs: PathAttributes | undefined, nextHop?: readonly string[]): Refusal | undefined {
    const policy = peer.importPolicy
    if (attrs === undefined || (policy !== undefined && policy.passesAll !== true && !passesSection6(policy, prefixes)) || !this.table.runsAppend || peer.importTable === true) {
      return this.receive(peer, session, ipv6PrefixList(prefixes), attrs, nextHop)
    }
    return this.receiveRun(peer, session, prefixes, (i) => ipv6Prefix(prefixes.addr.subarray(i * 16, i * 16 + 16), prefixes.len[i]!), attrs, nextHop)
  }

  /** A section as one run of new destinations (see receiveIpv4); `prefixAt` makes prefix i as an object. */
  private receiveRun(peer: RibPeer, session: PeerSessionInfo, prefixes: Ipv4Prefixes | Ipv6Prefixes, prefixAt: (i: number) => Prefix, attrs: PathAttributes, nextHop: readonly string[] | undefined): Refusal | undefined {
    const c = this.countersOf(peer)
    const count = prefixes.count
    c.received += count
    const clean = this.admit(peer, attrs, nextHop)
    if ('kind' in clean) {
      for (let i = 0; i < count; i++) this.removePath(peer.id, prefixAt(i), c)
      return clean
    }
    const shared = this.interner.intern(clean, nextHop ?? [])
    const source = this.sourceOf(peer, session)
    const held: number[] = []
    c.accepted += this.table.addRun(source, prefixes, shared, held)
    for (const i of held) this.setPath(source, prefixAt(i), shared, c)
    this.interner.release(shared)
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
    if (peer.type === 'ebgp' && this.rfc8212 && (policy === undefined || policy.empty)) return { kind: 'rfc8212', reason: 'RFC 8212: no import policy for an eBGP peer' }
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

  /** Stores a path and counts it; `attrs` stays the caller's reference. */
  private setPath(source: PathSource, p: Prefix, attrs: InternedAttributes, c: Counters): void {
    const done = this.table.setPath(source, p, attrs)
    // A new path, the common case, counted here: a table dump's first prefixes run in the interpreter.
    if (done === PATH_ADDED) c.accepted++
    else if (done !== 0) this.count(c, p.afi, done)
  }

  private removePath(peerId: number, p: Prefix, c: Counters): void {
    this.count(c, p.afi, this.table.removePath(peerId, p))
  }

  /** What a setPath() or removePath() of the table did (PATH_* flags), in the peer's counters. */
  private count(c: Counters, afi: number, done: number): void {
    if ((done & PATH_ADDED) !== 0) c.accepted++
    if ((done & PATH_REMOVED) !== 0) c.accepted--
    if ((done & PATH_WAS_STALE) !== 0) c.stale[afi]!--
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
      const op = reimportOp(this.table.attrsFrom(p, peer.id)?.attrs, next)
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

  // Sessions ending, graceful restart (RFC 4724).

  /**
   * The peer's session went down. Paths of the families in `keepStale` stay, marked stale, until
   * End-of-RIB or sweepStale(); the others go now.
   */
  peerDown(peer: RibPeer, keepStale: ReadonlySet<FamilyKey>): void {
    const c = this.countersOf(peer)
    c.received = 0
    // The next session sends its table again, stale paths or not: what this one sent is no longer its word.
    this.importTables.get(peer.id)?.table.clear()
    this.importTables.delete(peer.id)
    for (const afi of FAMILIES) {
      if (keepStale.has(familyKey(afi, UNICAST))) c.stale[afi]! += this.table.markStale(peer.id, afi)
      else this.dropFrom(peer, afi, false, c)
    }
  }

  /**
   * RFC 4760 §7: the peer sent a malformed MP attribute for `family`; every path of that family from it
   * goes (stale ones too), its other families stay, and so does the session.
   */
  dropFamily(peer: RibPeer, family: FamilyKey): void {
    const afi = family >> 8
    if ((afi !== 1 && afi !== 2) || (family & 255) !== UNICAST) return
    this.importTables.get(peer.id)?.table.dropAfi(afi)
    this.dropFrom(peer, afi, false, this.countersOf(peer))
  }

  /** RFC 4724 §4.2: End-of-RIB from the restarted peer; what it did not re-send is gone. */
  endOfRib(peer: RibPeer, family: FamilyKey): void {
    const afi = family >> 8
    if (afi === 1 || afi === 2) this.dropStale(peer, afi)
  }

  /** The restart timer expired: every stale path of the peer goes. */
  sweepStale(peer: RibPeer): void {
    for (const afi of FAMILIES) this.dropStale(peer, afi)
  }

  private dropStale(peer: RibPeer, afi: number): void {
    const c = this.countersOf(peer)
    // A session that did not restart (the common End-of-RIB) holds nothing stale: no walk over the table.
    if (c.stale[afi] !== 0) this.dropFrom(peer, afi, true, c)
  }

  private dropFrom(peer: RibPeer, afi: number, staleOnly: boolean, c: Counters): void {
    const gone = this.table.removeFrom(peer.id, afi, staleOnly)
    c.accepted -= gone.removed
    c.stale[afi]! -= gone.stale
  }

  /** The session ended for good: its source is forgotten. */
  detach(peer: RibPeer): void {
    this.sources.delete(peer.id)
  }

  counts(peer: RibPeer): PeerCounts {
    const c = this.counters.get(peer.id)
    const kept = this.importTables.get(peer.id)
    return { received: c?.received ?? 0, accepted: c?.accepted ?? 0, ...(kept !== undefined || peer.importTable === true ? { importTable: kept?.table.size ?? 0 } : {}) }
  }
}
