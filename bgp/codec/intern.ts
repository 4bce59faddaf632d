// Interned path-attribute sets: the RIB keeps one copy per distinct set, and once interned, equal sets
// compare equal by identity. Two sets are equal when their canonical wire encodings (4-octet ASes,
// canonical order, attributesKey) are, with the same MP next hops; the interner finds them by a
// numeric hash of the fields and compares field by field, so a lookup encodes nothing and makes no
// string. A real table carries a new set every few prefixes: encoding each for its key took most of a
// 100k-prefix dump's RIB time when its UPDATEs held three prefixes each.

import { Writer } from './buffer.js'
import { encodeAttributes, type AsPathSegment, type PathAttributes, type UnknownAttribute } from './attributes.js'
import { AttrFlag } from './constants.js'
import { parseIpv4 } from '../../net/index.js'

const CANONICAL = { as4: true } as const
const scratch = new Writer(4096)

/** The canonical key of an attribute set and the next hops that go with it. */
export function attributesKey(attrs: PathAttributes, nextHop?: readonly string[]): string {
  scratch.pos = 0
  encodeAttributes(scratch, attrs, CANONICAL)
  const key = scratch.buf.toString('latin1', 0, scratch.pos)
  return nextHop && nextHop.length > 0 ? `${key}|${nextHop.join(',')}` : key
}

const mix = (h: number, x: number): number => Math.imul(h ^ x, 0x01000193)

/** Unknown attributes as the canonical encoding writes them: one per code (the last), by code. */
function canonicalUnknown(list: readonly UnknownAttribute[]): UnknownAttribute[] {
  return [...new Map(list.map((u) => [u.code, u])).values()].sort((x, y) => x.code - y.code)
}

function mixText(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) h = mix(h, s.charCodeAt(i))
  return mix(h, s.length)
}

/** An IPv4 address as the encoding writes it (parsed: "192.000.2.1" is 192.0.2.1); other text as is. */
function mixIpv4(h: number, s: string): number {
  const n = parseIpv4(s)
  return n === undefined ? mixText(h, s) : mix(h, n | 0)
}

function mixSegments(h: number, path: readonly AsPathSegment[]): number {
  for (const seg of path) {
    h = mix(h, seg.type)
    for (const asn of seg.asns) h = mix(h, asn | 0)
    h = mix(h, seg.asns.length)
  }
  return mix(h, path.length)
}

/** A list the encoding leaves out when empty. */
const none = <T>(list: readonly T[] | undefined): boolean => list === undefined || list.length === 0

/** A hash of exactly what attributesKey encodes: sets with equal keys have equal hashes. */
export function attributesHash(a: PathAttributes, nextHop: readonly string[]): number {
  let h = 0x811c9dc5
  h = mix(h, a.origin ?? -1)
  h = a.asPath === undefined ? mix(h, -1) : mixSegments(h, a.asPath)
  h = a.nextHop === undefined ? mix(h, -1) : mixIpv4(h, a.nextHop)
  h = mix(h, a.med === undefined ? -1 : a.med | 0)
  h = mix(h, a.localPref === undefined ? -1 : a.localPref | 0)
  h = mix(h, a.atomicAggregate === true ? 1 : 0)
  if (a.aggregator !== undefined) h = mixIpv4(mix(h, a.aggregator.asn | 0), a.aggregator.address)
  if (!none(a.communities)) for (const c of a.communities!) h = mix(h, c | 0)
  h = mix(h, a.communities?.length ?? 0)
  if (a.originatorId !== undefined) h = mixIpv4(h, a.originatorId)
  if (!none(a.clusterList)) for (const c of a.clusterList!) h = mixIpv4(h, c)
  if (!none(a.extCommunities)) for (const c of a.extCommunities!) h = mixText(h, c.toLowerCase())
  if (!none(a.largeCommunities)) for (const [g, l1, l2] of a.largeCommunities!) h = mix(mix(mix(h, g | 0), l1 | 0), l2 | 0)
  if (!none(a.unknown)) {
    for (const u of canonicalUnknown(a.unknown!)) {
      h = mix(mix(h, u.code), u.flags & ~AttrFlag.EXTENDED_LENGTH)
      for (let i = 0; i < u.value.length; i++) h = mix(h, u.value[i]!)
    }
  }
  for (const hop of nextHop) h = mixText(h, hop)
  // An int32, which V8 keeps unboxed as a Map key (a uint32 past 2^31 became a heap number).
  return h | 0
}

const sameIpv4 = (x: string, y: string): boolean => x === y || (parseIpv4(x) !== undefined && parseIpv4(x) === parseIpv4(y))

function sameList<T>(x: readonly T[] | undefined, y: readonly T[] | undefined, same: (a: T, b: T) => boolean): boolean {
  if (none(x)) return none(y)
  if (none(y) || x!.length !== y!.length) return false
  for (let i = 0; i < x!.length; i++) if (!same(x![i]!, y![i]!)) return false
  return true
}

const sameNumber = (x: number, y: number): boolean => x === y
const sameSegment = (x: AsPathSegment, y: AsPathSegment): boolean => x.type === y.type && sameList(x.asns, y.asns, sameNumber)

function samePath(x: readonly AsPathSegment[] | undefined, y: readonly AsPathSegment[] | undefined): boolean {
  // An empty AS_PATH is encoded (an empty attribute); a missing one is not.
  if (x === undefined || y === undefined) return x === y
  return x.length === y.length && x.every((s, i) => sameSegment(s, y[i]!))
}

function sameBytes(x: Uint8Array, y: Uint8Array): boolean {
  if (x.length !== y.length) return false
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false
  return true
}

/**
 * Whether two sets have the same canonical encoding (attributesKey), field by field: AS4_PATH and
 * AS4_AGGREGATOR are not part of it (a 4-octet encoding leaves them out), nor is an empty community list,
 * and unknown attributes count by code, whatever their order.
 */
export function attributesEqual(a: PathAttributes, b: PathAttributes): boolean {
  if (a === b) return true
  return (
    a.origin === b.origin &&
    samePath(a.asPath, b.asPath) &&
    (a.nextHop === undefined || b.nextHop === undefined ? a.nextHop === b.nextHop : sameIpv4(a.nextHop, b.nextHop)) &&
    a.med === b.med &&
    a.localPref === b.localPref &&
    (a.atomicAggregate === true) === (b.atomicAggregate === true) &&
    (a.aggregator === undefined || b.aggregator === undefined
      ? a.aggregator === b.aggregator
      : a.aggregator.asn === b.aggregator.asn && sameIpv4(a.aggregator.address, b.aggregator.address)) &&
    sameList(a.communities, b.communities, sameNumber) &&
    (a.originatorId === undefined || b.originatorId === undefined ? a.originatorId === b.originatorId : sameIpv4(a.originatorId, b.originatorId)) &&
    sameList(a.clusterList, b.clusterList, sameIpv4) &&
    sameList(a.extCommunities, b.extCommunities, (x, y) => x.toLowerCase() === y.toLowerCase()) &&
    sameList(a.largeCommunities, b.largeCommunities, (x, y) => x[0] === y[0] && x[1] === y[1] && x[2] === y[2]) &&
    (none(a.unknown) || none(b.unknown)
      ? none(a.unknown) === none(b.unknown)
      : sameList(canonicalUnknown(a.unknown!), canonicalUnknown(b.unknown!), (x, y) => x.code === y.code && ((x.flags ^ y.flags) & ~AttrFlag.EXTENDED_LENGTH) === 0 && sameBytes(x.value, y.value)))
  )
}

export interface InternedAttributes {
  /** A small number, the set's while it is interned; the interner gives it to another set once this one goes. */
  readonly id: number
  /** attributesHash of the set and its next hops. */
  readonly hash: number
  readonly attrs: PathAttributes
  readonly nextHop: readonly string[]
  /** How many routes hold this set; the interner forgets it at zero. */
  refs: number
}

const sameHops = (x: readonly string[], y: readonly string[]): boolean => x.length === y.length && x.every((h, i) => h === y[i])

export class AttributeInterner {
  /** By hash: the one set with it, or the few when hashes collide. */
  private readonly byHash = new Map<number, InternedAttributes | InternedAttributes[]>()
  /** By id (0 is no set): a column of ids in the RIB reads its sets back here. */
  private readonly byId: (InternedAttributes | undefined)[] = [undefined]
  /** Ids of sets forgotten, for the next sets. */
  private readonly freeIds: number[] = []
  private count = 0

  get size(): number {
    return this.count
  }

  /** The one shared copy of this set, its reference count raised by one. */
  intern(attrs: PathAttributes, nextHop: readonly string[] = []): InternedAttributes {
    const hash = attributesHash(attrs, nextHop)
    const found = this.byHash.get(hash)
    let entry: InternedAttributes | undefined
    if (found !== undefined) {
      if (!Array.isArray(found)) {
        if (attributesEqual(found.attrs, attrs) && sameHops(found.nextHop, nextHop)) entry = found
      } else entry = found.find((e) => attributesEqual(e.attrs, attrs) && sameHops(e.nextHop, nextHop))
    }
    if (entry === undefined) {
      // Object.assign, not a spread: freezing a spread copy cost three times as much here.
      const id = this.freeIds.pop() ?? this.byId.length
      entry = { id, hash, attrs: Object.freeze(Object.assign({}, attrs)), nextHop: nextHop.length === 0 ? NO_HOPS : Object.freeze([...nextHop]), refs: 0 }
      if (found === undefined) this.byHash.set(hash, entry)
      else if (Array.isArray(found)) found.push(entry)
      else this.byHash.set(hash, [found, entry])
      this.byId[id] = entry
      this.count++
    }
    entry.refs++
    return entry
  }

  release(entry: InternedAttributes): void {
    if (--entry.refs > 0) return
    const found = this.byHash.get(entry.hash)
    if (found === entry) this.byHash.delete(entry.hash)
    else if (Array.isArray(found)) {
      const i = found.indexOf(entry)
      if (i < 0) return
      found.splice(i, 1)
      if (found.length === 1) this.byHash.set(entry.hash, found[0]!)
    } else return
    this.byId[entry.id] = undefined
    this.freeIds.push(entry.id)
    this.count--
  }

  /** The set interned with `id`, or undefined (for 0, or an id no set holds). */
  get(id: number): InternedAttributes | undefined {
    return this.byId[id]
  }
}

const NO_HOPS: readonly string[] = Object.freeze([])
