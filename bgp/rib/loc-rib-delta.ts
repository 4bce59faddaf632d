// The Loc-RIB's changes as typed numbers for the dataplane: per changed destination its family, address,
// length, next hops (ids into an interned next-hop table), LOCAL_PREF and flags, filled by the flush and the
// streaming walk. No Path objects, no prefix text; it knows no policy and no kernel.

import { grown, parseIpv4, parseIpv6, type Family } from '../../net/index.js'
import type { InternedAttributes } from '../codec/intern.js'

/** No best path now: the destination left the Loc-RIB. */
export const DELTA_WITHDRAWN = 1
/** The best path is this speaker's own (nothing to route to a peer). */
export const DELTA_LOCAL = 2
/** The destination had no best path before this change. */
export const DELTA_NEW = 4
/** The best path carries LOCAL_PREF (localPref(i) is it). */
export const DELTA_HAS_LOCAL_PREF = 8

/**
 * Next-hop addresses by small id, each address parsed once. Ids are never reused: a table holds as many
 * as there are distinct next hops (the nodes and routers of the fabric), not one per route.
 */
export class NextHopTable {
  private readonly byText = new Map<string, number>()
  private readonly families: Family[] = []
  private readonly v4: number[] = []
  private readonly v6: (Uint8Array | undefined)[] = []
  private readonly texts: string[] = []

  /** The id of `text`, or -1 when it is not an IP address. */
  idOf(text: string): number {
    const known = this.byText.get(text)
    if (known !== undefined) return known
    const a4 = parseIpv4(text)
    const a6 = a4 === undefined ? parseIpv6(text) : undefined
    if (a4 === undefined && a6 === undefined) return -1
    const id = this.texts.length
    this.byText.set(text, id)
    this.families.push(a4 !== undefined ? 4 : 6)
    this.v4.push(a4 ?? 0)
    this.v6.push(a6)
    this.texts.push(text)
    return id
  }

  family(id: number): Family {
    return this.families[id]!
  }

  /** An IPv4 next hop as an unsigned number. */
  ipv4(id: number): number {
    return this.v4[id]!
  }

  ipv6(id: number): Uint8Array | undefined {
    return this.v6[id]
  }

  /** The address as the peer sent it, for logs and the API. */
  text(id: number): string {
    return this.texts[id]!
  }

  get size(): number {
    return this.texts.length
  }
}

/** Grows a typed array to hold `n` elements, keeping its contents. */
function fit<T extends Uint8Array | Uint32Array | Int32Array>(a: T, n: number): T {
  return n <= a.length ? a : grown(a, Math.max(n, a.length * 2))
}

/**
 * One batch of Loc-RIB changes as columns, entry i for i < count. A listener reads it during its call only:
 * the RIB reuses the arrays for the next batch.
 */
export class LocRibDeltas {
  count = 0
  private flag = new Uint8Array(256)
  private fam = new Uint8Array(256)
  private length = new Uint8Array(256)
  private a4 = new Uint32Array(256)
  /** Entry i's IPv6 address is a6[16i, 16i + 16). */
  private a6 = new Uint8Array(256 * 16)
  /** What ipv6() hands out: one array, filled anew at each call. */
  private readonly view6 = new Uint8Array(16)
  private lp = new Uint32Array(256)
  /** Entry i's hops are hopIds[hopStart[i] .. hopStart[i + 1]). */
  private hopStart = new Int32Array(257)
  private hopIds = new Int32Array(256)
  /** The next hop and LOCAL_PREF of each attribute set, by interner id, checked against the set itself. */
  private readonly cachedSet: (InternedAttributes | undefined)[] = []
  private readonly cachedHop: number[] = []

  constructor(readonly nextHops: NextHopTable) {}

  reset(): void {
    this.count = 0
  }

  flags(i: number): number {
    return this.flag[i]!
  }

  family(i: number): Family {
    return this.fam[i] as Family
  }

  len(i: number): number {
    return this.length[i]!
  }

  /** The IPv4 network address, unsigned. */
  ipv4(i: number): number {
    return this.a4[i]!
  }

  /** The IPv6 network address: the same 16-byte array from call to call, valid until the next call. */
  ipv6(i: number): Uint8Array {
    const v = this.view6
    const a = this.a6
    for (let k = 0, at = i * 16; k < 16; k++) v[k] = a[at + k]!
    return v
  }

  localPref(i: number): number | undefined {
    return (this.flag[i]! & DELTA_HAS_LOCAL_PREF) !== 0 ? this.lp[i] : undefined
  }

  hopCount(i: number): number {
    return this.hopStart[i + 1]! - this.hopStart[i]!
  }

  /** The k-th next hop id of entry i (see nextHops). */
  hop(i: number, k: number): number {
    return this.hopIds[this.hopStart[i]! + k]!
  }

  /** The next-hop id of a path with these attributes, or -1 when it has none. */
  hopOf(attrs: InternedAttributes): number {
    if (this.cachedSet[attrs.id] === attrs) return this.cachedHop[attrs.id]!
    const text = attrs.nextHop[0] ?? attrs.attrs.nextHop
    const id = text === undefined ? -1 : this.nextHops.idOf(text)
    this.cachedSet[attrs.id] = attrs
    this.cachedHop[attrs.id] = id
    return id
  }

  /** Starts entry `count`: a destination whose best path is `best` (undefined: withdrawn). */
  private begin(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, flags: number, best: InternedAttributes | undefined): number {
    const i = this.count++
    if (i >= this.flag.length) this.grow(i + 1)
    const lp = best?.attrs.localPref
    this.flag[i] = flags | (best === undefined ? DELTA_WITHDRAWN : 0) | (lp !== undefined ? DELTA_HAS_LOCAL_PREF : 0)
    this.fam[i] = family
    this.length[i] = len
    this.a4[i] = addr4
    if (addr6 !== undefined) for (let k = 0, a = this.a6, at = i * 16; k < 16; k++) a[at + k] = addr6[k] ?? 0
    this.lp[i] = lp ?? 0
    this.hopStart[i + 1] = this.hopStart[i]!
    return i
  }

  private addHop(i: number, id: number): void {
    if (id < 0) return
    const from = this.hopStart[i]!
    const end = this.hopStart[i + 1]!
    for (let k = from; k < end; k++) if (this.hopIds[k] === id) return
    this.hopIds = fit(this.hopIds, end + 1)
    this.hopIds[end] = id
    this.hopStart[i + 1] = end + 1
  }

  /** A destination with one path (or none: `best` undefined), the common case, with no object in hand. */
  addOne(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, flags: number, best: InternedAttributes | undefined): void {
    const i = this.begin(family, addr4, addr6, len, flags, best)
    if (best !== undefined) this.addHop(i, this.hopOf(best))
  }

  /** A destination whose best path is `best`, with the equal-cost set `multipath` (the best among them). */
  addMany(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, flags: number, best: InternedAttributes, multipath: readonly { readonly attrs: InternedAttributes }[]): void {
    const i = this.begin(family, addr4, addr6, len, flags, best)
    if (multipath.length === 0) this.addHop(i, this.hopOf(best))
    for (const p of multipath) this.addHop(i, this.hopOf(p.attrs))
  }

  private grow(n: number): void {
    this.flag = fit(this.flag, n)
    this.fam = fit(this.fam, n)
    this.length = fit(this.length, n)
    this.a4 = fit(this.a4, n)
    this.a6 = fit(this.a6, this.flag.length * 16)
    this.lp = fit(this.lp, n)
    this.hopStart = fit(this.hopStart, this.flag.length + 1)
  }
}
