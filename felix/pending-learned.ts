// The learned prefixes changed since the desired table's last take, as numbers: each with the combo it held
// at that take (-1: none), in typed-array hash tables, so a million changed routes cost no object or key;
// and the parsing of a route key back into the prefix a learned route would have. Pure storage.

import { MIN_SLOTS, parseIpv4, parseIpv6, V4PrefixMap, V6PrefixMap, type Family } from '../net/index.js'
import type { LearnedRoutes } from './learned-routes.js'

/** Not in a pending map: no change since the last take. */
export const NOT_PENDING = -2

/**
 * The learned prefixes changed since a take, each with the combo it held then (-1: none). Each such combo is
 * retained in `learned` until the change is walked (see walked()), so its id keeps naming those hops.
 */
export class PendingLearned {
  /**
   * IPv4: prefix -> the combo it held (-1: none). -1 is implicit, so the list of a table arriving, whose
   * prefixes held nothing, keeps no values.
   */
  readonly v4 = new V4PrefixMap(MIN_SLOTS, -1)
  /** IPv6: prefix -> the combo it held (-1: none, implicit). */
  readonly v6 = new V6PrefixMap(MIN_SLOTS, -1)
  size = 0

  constructor(private readonly learned: LearnedRoutes) {}

  before(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number): number {
    if (family === 4) return this.v4.get(addr4, len, NOT_PENDING)
    return this.v6.get(addr6!, len, NOT_PENDING)
  }

  /**
   * Notes the prefix with the combo it holds now, unless it is noted already (the first change keeps its).
   * `retained`: the caller holds a reference on the combo for the list, which takes it (or releases it).
   */
  note(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, combo: number, retained = false): void {
    const held = family === 4 ? this.v4.add(addr4, len, combo, NOT_PENDING) : this.v6.add(addr6!, len, combo, NOT_PENDING)
    if (held !== NOT_PENDING) {
      if (retained) this.walked(combo)
      return
    }
    if (combo >= 0 && !retained) this.learned.retain(combo)
    this.size++
  }

  /** A noted combo is no longer needed (its change was walked, or the list is dropped). */
  walked(combo: number): void {
    if (combo >= 0) this.learned.release(combo)
  }

  /** Drops every noted change, releasing their combos. */
  clear(): void {
    const v4 = this.v4
    for (let s = v4.next(-1); s >= 0; s = v4.next(s)) this.walked(v4.valueAt(s))
    const v6 = this.v6
    for (let s = v6.next(-1); s >= 0; s = v6.next(s)) this.walked(v6.valueAt(s))
    v4.clear()
    v6.clear()
    this.size = 0
  }

  /**
   * The prefix is written as the table holds it now (a walk of an earlier take, or of the table, rendered
   * it): a change noted before no longer differs from what the kernel holds, so it is dropped, and the
   * list of a table arriving while it is written stays as small as what is not yet written.
   */
  written(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number): void {
    const map = family === 4 ? this.v4 : this.v6
    const s = family === 4 ? this.v4.find(addr4, len) : this.v6.find(addr6!, len)
    if (s < 0) return
    this.walked(map.valueAt(s))
    map.deleteAt(s)
    this.size--
  }
}


/** A learned route's prefix as a key names it, when the key is one a learned route can have in `table`. */
export interface KeyPrefix {
  family: Family
  addr4: number
  addr6: Uint8Array | undefined
  len: number
}

export function parseKey(key: string, table: number, out: KeyPrefix): boolean {
  const a = key.indexOf(' ')
  const b = key.indexOf(' ', a + 1)
  const c = key.indexOf(' ', b + 1)
  if (a < 0 || b < 0 || c < 0 || Number(key.slice(0, a)) !== table || key.slice(b + 1, c) !== '0') return false
  const slash = key.indexOf('/', a)
  if (slash < 0 || slash > b) return false
  out.len = Number(key.slice(slash + 1, b))
  if (key.lastIndexOf(':', b) > a) {
    const addr6 = parseIpv6(key.slice(a + 1, slash))
    if (addr6 === undefined) return false
    out.family = 6
    out.addr4 = 0
    out.addr6 = addr6
    return true
  }
  const addr4 = parseIpv4(key.slice(a + 1, slash))
  if (addr4 === undefined) return false
  out.family = 4
  out.addr4 = addr4
  out.addr6 = undefined
  return true
}
