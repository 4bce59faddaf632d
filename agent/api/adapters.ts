// Ready-made ApiDeps parts over pinto's real objects: the BGP speaker, IPAM over its datastore, and a log
// of felix's applies. They only read (and count); nothing here changes routes, sessions or the store.

import type { BgpSpeaker } from '../../bgp/speaker.js'
import { ipv4Prefix, ipv6Prefix, type Prefix } from '../../bgp/codec/index.js'
import { DELTA_NEW, DELTA_WITHDRAWN } from '../../bgp/rib/loc-rib-delta.js'
import { mayExport, routeContext, transform } from '../../bgp/rib/export.js'
import type { ApplyResult } from '../../felix/route-reconciler.js'
import type { Ipam } from '../../ipam/ipam.js'
import { BLOCKS_PREFIX, decodeBlock } from '../../ipam/records.js'
import type { AdvertisedRoute, BgpReads, FibStats, IpamReads } from './deps.js'
import { SortedPrefixes } from './paginate.js'

export function speakerReads(speaker: BgpSpeaker): BgpReads {
  const rib = speaker.rib
  let version = 0
  // A sorted copy of the Loc-RIB for paging, built now (the agent builds this with an empty RIB) and kept
  // current from the change stream: a few changes are spliced in when a page is asked for; after a
  // burst (a table dump) the copy is rebuilt once instead of splicing each of a million prefixes.
  const build = (): SortedPrefixes =>
    new SortedPrefixes(
      (function* () {
        for (const [prefix] of rib.locRib()) yield prefix
      })(),
    )
  let sorted: SortedPrefixes | undefined = build()
  let pending: { readonly prefix: Prefix; readonly add: boolean }[] = []
  const SPLICE_LIMIT = 256
  // For the lifetime of the speaker: the agent reads its RIB until it stops. The typed deltas, so that a
  // table dump makes no Path object for this listener; a prefix object only for the few spliced in.
  rib.subscribeDeltas((d) => {
    version++
    if (sorted === undefined) return
    for (let i = 0; i < d.count; i++) {
      const f = d.flags(i)
      if ((f & (DELTA_WITHDRAWN | DELTA_NEW)) === 0) continue
      if (pending.length >= SPLICE_LIMIT) {
        sorted = undefined
        pending = []
        return
      }
      const prefix = d.family(i) === 4 ? ipv4Prefix(d.ipv4(i), d.len(i)) : ipv6Prefix(d.ipv6(i), d.len(i))
      pending.push({ prefix, add: (f & DELTA_WITHDRAWN) === 0 })
    }
  })
  return {
    sortedLocRib() {
      if (sorted === undefined) sorted = build()
      for (const c of pending) {
        if (c.add) sorted.add(c.prefix)
        else sorted.remove(c.prefix)
      }
      pending = []
      return sorted
    },
    get locRibVersion() {
      return version
    },
    get asn() {
      return speaker.asn
    },
    get routerId() {
      return speaker.routerId
    },
    get locRibSize() {
      return rib.size
    },
    peerStatus: () => speaker.peerStatus(),
    transitions: (q) => speaker.transitions.recent(q),
    *locRibPrefixes() {
      yield* rib.prefixes()
    },
    best: (prefix) => rib.best(prefix),
    adjRibIn(name) {
      if (speaker.peer(name) === undefined) return undefined
      const rp = speaker.ribPeer(name)
      return rp === undefined ? [] : rib.adjRibIn(rp)
    },
    adjRibOut(name) {
      if (speaker.peer(name) === undefined) return undefined
      const rp = speaker.ribPeer(name)
      return rp === undefined ? [] : advertised()
      // The speaker keeps each peer's Adj-RIB-Out private, so this re-applies the same export rules
      // (bgp/rib/export.ts) to the Loc-RIB. While the session is up every exportable best path is held
      // or queued for the peer, so the result equals what it holds once the queue has drained.
      function* advertised(): Iterable<AdvertisedRoute> {
        const ctx = rib.exportContext
        for (const [prefix, best] of rib.locRib()) {
          const path = best.path
          if (!mayExport(path, rp!, ctx)) continue
          let attrs = path.attrs.attrs
          const policy = rp!.exportPolicy
          if (policy !== undefined) {
            const r = policy.apply(prefix, attrs, rp!, routeContext(path, path.peer === undefined ? rib.interfaceOf(path) : undefined))
            if (r === undefined) continue
            attrs = r
          }
          const out = transform(path, attrs, rp!, ctx)
          if (out === undefined) continue
          const nextHop = out.nextHop.length > 0 ? out.nextHop : out.attributes.nextHop !== undefined ? [out.attributes.nextHop] : []
          yield { prefix, attributes: out.attributes, nextHop }
        }
      }
    },
  }
}

/** IPAM reads straight from the datastore the Ipam writes, so they show every node's blocks. */
export function ipamReads(ipam: Ipam): IpamReads {
  return {
    async blocks() {
      const { items } = await ipam.store.list(BLOCKS_PREFIX)
      return items.map((kv) => decodeBlock(kv.key, kv.value))
    },
    pools: () => ipam.pools(),
  }
}

/**
 * Counts felix's applies for /metrics and /v1/status: the agent calls record() after each apply. It keeps
 * the last `keep` durations with growing sequence numbers, so a scrape observes each duration once.
 */
export class FibApplyLog {
  private applies = 0
  private failures = 0
  private routeErrors = 0
  private lastAt: number | undefined
  private seq = 0
  private readonly recent: { seq: number; seconds: number }[] = []

  constructor(
    private readonly keep = 1024,
    private readonly now: () => number = Date.now,
  ) {}

  /** One apply: its result (or the error it threw) and how long it took. */
  record(result: ApplyResult | Error, seconds: number): void {
    this.applies++
    this.lastAt = this.now()
    if (result instanceof Error || result.errors.length > 0) this.failures++
    this.routeErrors = result instanceof Error ? this.routeErrors : result.errors.length
    this.recent.push({ seq: ++this.seq, seconds })
    if (this.recent.length > this.keep) this.recent.splice(0, this.recent.length - this.keep)
  }

  stats(): FibStats {
    return { applies: this.applies, failures: this.failures, routeErrors: this.routeErrors, lastApplyAt: this.lastAt, recent: this.recent.slice() }
  }
}
