// The destinations changed since the last flush, each with its best as it stood then, and the loop that
// decides them again and reports each whose best changed to a BestChangeSink. Part of the destination
// table, which alone calls it; it applies no policy and knows no listener or Adj-RIB-Out.

import type { InternedAttributes } from '../codec/intern.js'
import type { Prefix } from '../codec/nlri.js'
import { AFI_SHIFT, COMPACT, DIRTY, LEN_SHIFT, MULTIPATH, REASON_MASK, UNSETTLED, type DestinationColumns, type PathSource } from './columns.js'
import type { Path } from './types.js'

/** A destination's AFI bits (see AFI_SHIFT). */
const AFI_BITS = 3 << AFI_SHIFT

/** Told by a flush of each destination whose best path changed. */
export interface BestChangeSink {
  /**
   * `d` had no best path at the last flush, and now has one path, from `source` with `attrs`: its best
   * (a table dump's every prefix). Its family, IPv4 address (0 for IPv6) and length come with it, and
   * whether an Adj-RIB-Out holds it (one that may not take it may have to withdraw it).
   */
  added(d: number, afi: 1 | 2, addr4: number, len: number, source: PathSource, attrs: InternedAttributes, held: boolean): void
  /**
   * Destinations [from, to) are new since the last flush and held by no Adj-RIB-Out, and each has one
   * path, from `source` with `attrs`, as its best: a table dump's new prefixes of one family, told in one call.
   */
  addedRun(from: number, to: number, source: PathSource, attrs: InternedAttributes): void
  /**
   * Any other change: `d`'s settled best path (none: the table's best(d) is undefined) is not the one it
   * had at the last flush, `previous` (read during the call only).
   */
  bestChanged(d: number, previous: PreviousBest): void
}

/** What the settling reads of the destination table. */
export interface Decider {
  /** Decides `d`'s best path if a change left it undecided. */
  settle(d: number): void
  multipathOf(d: number): Path[] | undefined
}

function sameMultipath(a: readonly Path[] | undefined, b: readonly Path[] | undefined): boolean {
  if (a === b) return true
  if (a === undefined || b === undefined || a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * Entry i: destination dests[i] and its best path as of the last flush, a Path object (`best`, with
 * `attrs` undefined) or a compact path's source and attributes. The arrays keep their length from flush to
 * flush and are written by index, since a full table arrives in thousands of flushes.
 */
class TouchedList {
  readonly dests: number[] = []
  // Made holding a reference kind from the start, so that every list's arrays keep one shape and add()
  // stays monomorphic.
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
   * last run, so a flush after many sections meets one run.
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

/**
 * A destination's best path before the changes a flush reports: none, a Path object, or a compact path
 * (source and attributes). One instance, refilled for each change: read it during the call only.
 */
export class PreviousBest {
  private source: Path | PathSource | undefined = undefined
  private attrs: InternedAttributes | undefined = undefined

  set(source: Path | PathSource | undefined, attrs: InternedAttributes | undefined): this {
    this.source = source
    this.attrs = attrs
    return this
  }

  /** The destination had no best path. */
  get none(): boolean {
    return this.source === undefined
  }

  /** The previous best as a Path (a compact one made anew, with `prefix`). */
  path(prefix: Prefix): Path | undefined {
    const s = this.source
    if (s === undefined || this.attrs === undefined) return s as Path | undefined
    return { prefix, peer: s.peer, session: s.session, attrs: this.attrs, stale: false }
  }
}

/** The destinations changed since the last flush, and their settling at the next one. */
export class Changes {
  private readonly touched = new TouchedList()
  private readonly previous = new PreviousBest()

  constructor(
    private readonly t: DestinationColumns,
    private readonly decider: Decider,
  ) {}

  /** Whether any destination changed since the last settle(). */
  get any(): boolean {
    return this.touched.length > 0 || this.touched.runs.length > 0
  }

  /**
   * Marks `d` for the next flush, noting its best path as of the last one. Called before a compact path
   * changes (the columns are its best path), and before or after an object path changes (the settled
   * best stays until the flush settles it again).
   */
  touch(d: number): void {
    const t = this.t
    const bits = t.bits[d]!
    if ((bits & DIRTY) === 0) {
      if ((bits & COMPACT) !== 0) this.touched.add(d, t.source.get(d), t.attrs.get(d), undefined)
      else this.touched.add(d, t.best.get(d), undefined, this.decider.multipathOf(d))
    }
    t.bits[d] = bits | DIRTY | UNSETTLED
  }

  /** New destinations [from, to), each with one compact path, marked DIRTY | UNSETTLED already. */
  addNew(from: number, to: number): void {
    this.touched.addNew(from, to)
  }

  /**
   * Settles every destination changed since the last call and tells `sink` of each whose best path is
   * not the one it had then; frees those left empty and unheld. Destinations that `sink` changes again
   * wait for the next call.
   */
  settle(sink: BestChangeSink): void {
    const list = this.touched
    const n = list.length
    const r = list.runs.length
    if (r > 0) this.settleRuns(list.runs, r, sink)
    if (n > 0) this.settleTouched(list, n, sink)
    list.dropFirst(n, r)
  }

  /**
   * The runs of new destinations (the first `r` bounds of `runs`): those still holding the one compact
   * path their section gave them (a dump's every prefix) need only their flags cleared, and go to the sink
   * in stretches that share a source, an attribute set and a family. Any other went on to change before the flush
   * (or an Adj-RIB-Out attached since holds it): the general way. No call per destination on the common
   * path, since a dump's first prefixes run in the interpreter.
   */
  private settleRuns(runs: readonly number[], r: number, sink: BestChangeSink): void {
    const t = this.t
    const { bits, holders } = t
    const sources = t.source.ids
    const attrs = t.attrs.ids
    for (let j = 0; j < r; j += 2) {
      const to = runs[j + 1]!
      let from = runs[j]!
      for (let d = from; d < to; d++) {
        const now = bits[d]!
        if ((now & (COMPACT | MULTIPATH)) !== COMPACT || holders[d] !== 0) {
          this.addedRun(from, d, sink)
          this.settleOne(d, undefined, undefined, undefined, sink)
          from = d + 1
          continue
        }
        if (sources[d] !== sources[from] || attrs[d] !== attrs[from] || ((now ^ bits[from]!) & AFI_BITS) !== 0) {
          this.addedRun(from, d, sink)
          from = d
        }
        bits[d] = now & ~(DIRTY | UNSETTLED | REASON_MASK)
      }
      this.addedRun(from, to, sink)
    }
  }

  /** Destinations [from, to) of a run, settled, with one source and attribute set: to the sink. */
  private addedRun(from: number, to: number, sink: BestChangeSink): void {
    if (from < to) sink.addedRun(from, to, this.t.source.get(from)!, this.t.attrs.get(from)!)
  }

  /**
   * The touched list's first `n` entries. A loop of its own, apart from the runs: V8 optimizes each while
   * it runs, and each then sees only the shapes it needs.
   */
  private settleTouched(list: TouchedList, n: number, sink: BestChangeSink): void {
    const t = this.t
    const { dests, best: prevBest, attrs: prevAttrs, multi: prevMulti } = list
    for (let i = 0; i < n; i++) {
      const d = dests[i]!
      const before = prevBest[i]
      const now = t.bits[d]!
      if (before === undefined && (now & (COMPACT | MULTIPATH)) === COMPACT) {
        // No path before, one compact path now: what settle() does for it, and the best has changed.
        t.bits[d] = now & ~(DIRTY | UNSETTLED | REASON_MASK)
        const afi = ((now >>> AFI_SHIFT) & 3) as 1 | 2
        sink.added(d, afi, afi === 1 ? t.addr4[d]! >>> 0 : 0, (now >>> LEN_SHIFT) & 0xff, t.source.get(d)!, t.attrs.get(d)!, t.isHeld(d))
        continue
      }
      this.settleOne(d, before, prevAttrs[i], prevMulti[i], sink)
    }
  }

  /** Any destination but a new compact one: a method of its own, so the loops above stay small. */
  private settleOne(d: number, before: Path | PathSource | undefined, beforeAttrs: InternedAttributes | undefined, beforeMulti: Path[] | undefined, sink: BestChangeSink): void {
    const t = this.t
    this.decider.settle(d)
    const bits = (t.bits[d]! &= ~DIRTY)
    if (!this.sameBest(d, bits, before, beforeAttrs, beforeMulti)) sink.bestChanged(d, this.previous.set(before, beforeAttrs))
    if (t.isEmpty(d)) t.release(d)
  }

  /**
   * Whether `d`'s settled best is the one noted before (`attrs` set: a compact path's source and
   * attributes; else a Path object). By content: a compact path that became an object when another
   * joined is still the same path.
   */
  private sameBest(d: number, bits: number, before: Path | PathSource | undefined, attrs: InternedAttributes | undefined, multi: Path[] | undefined): boolean {
    const t = this.t
    if ((bits & COMPACT) !== 0) {
      const source = t.source.get(d)!
      if (attrs !== undefined) return before === source && attrs === t.attrs.get(d)
      const b = before as Path | undefined
      return b !== undefined && b.prefix.pathId === 0 && b.peer === source.peer && b.session === source.session && b.attrs === t.attrs.get(d) && multi === undefined
    }
    const best = t.best.get(d)
    if (!sameMultipath(this.decider.multipathOf(d), multi)) return false
    if (attrs === undefined) return best === before
    return best !== undefined && best.prefix.pathId === 0 && best.peer === before!.peer && best.session === before!.session && best.attrs === attrs
  }
}
