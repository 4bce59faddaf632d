// An update group's held table by export result (prefixes sent with one attribute set, from one source),
// so that a peer joining the group is sent the whole table as batches encoded once for every joiner, less
// its own paths. Pure; it records what the group sent and decides nothing.

import type { Prefix } from '../codec/nlri.js'
import type { OutRoute } from './export.js'
import type { OutBatch } from './types.js'

const UNICAST = 1

interface Bucket {
  readonly key: string
  readonly route: OutRoute
  readonly afi: number
  /** Source peer id of the paths (-1: ours). */
  readonly src: number
  readonly prefixes: Map<number, Prefix>
  /** The bucket as one batch, shared by the joiners until the bucket changes. */
  batch: OutBatch | undefined
}

export class GroupDump {
  private readonly bucketOf = new Map<number, Bucket>()
  private readonly byKey = new Map<string, Bucket>()
  /** By result object first: shared export results repeat across prefixes, and the key string is long. */
  private readonly byRoute = new Map<OutRoute, Bucket>()

  get size(): number {
    return this.bucketOf.size
  }

  /** `d` (`prefix`) was sent as `out`, its best path from `src`. */
  add(d: number, prefix: Prefix, out: OutRoute, src: number): void {
    let b = this.byRoute.get(out)
    if (b === undefined || b.src !== src) {
      const key = `${src} ${prefix.afi}${out.key}`
      b = this.byKey.get(key)
      if (b === undefined) this.byKey.set(key, (b = { key, route: out, afi: prefix.afi, src, prefixes: new Map(), batch: undefined }))
      if (b.route === out) this.byRoute.set(out, b)
    }
    b.prefixes.set(d, prefix)
    b.batch = undefined
    this.bucketOf.set(d, b)
  }

  /** `d` is no longer held as it was. */
  remove(d: number): void {
    const b = this.bucketOf.get(d)
    if (b === undefined) return
    this.bucketOf.delete(d)
    b.prefixes.delete(d)
    b.batch = undefined
    if (b.prefixes.size > 0) return
    this.byKey.delete(b.key)
    if (this.byRoute.get(b.route) === b) this.byRoute.delete(b.route)
  }

  /**
   * The whole table as batches, less the paths from peer `skip` and the destinations in `without` (changed
   * since they were sent: the joiner is sent them with the next round). A bucket holding one of those is
   * a batch of this joiner's own.
   */
  batches(skip: number, without: ReadonlySet<number> = new Set()): OutBatch[] {
    const out: OutBatch[] = []
    const touched = new Set<Bucket>()
    for (const d of without) {
      const b = this.bucketOf.get(d)
      if (b !== undefined) touched.add(b)
    }
    for (const b of this.byKey.values()) {
      if (b.src === skip) continue
      if (touched.has(b)) {
        const announce = [...b.prefixes].filter(([d]) => !without.has(d)).map(([, p]) => p)
        if (announce.length > 0) out.push(this.batchOf(b, announce))
        continue
      }
      out.push((b.batch ??= this.batchOf(b)))
    }
    return out
  }

  private batchOf(b: Bucket, announce: Prefix[] = [...b.prefixes.values()]): OutBatch {
    return {
      afi: b.afi,
      safi: UNICAST,
      attributes: b.route.attributes,
      ...(b.route.nextHop.length > 0 ? { nextHop: b.route.nextHop } : {}),
      announce,
      withdraw: [],
      encoded: b.route.encoded,
      packed: { kept: true },
    }
  }
}
