// Ready-made ApiDeps parts over pinto's real objects: the BGP speaker, IPAM over its datastore, and a log
// of felix's applies. They only read (and count); nothing here changes routes, sessions or the store.

import type { BgpSpeaker } from '../../bgp/index.js'
import type { ApplyResult } from '../../felix/index.js'
import { type Ipam, BLOCKS_PREFIX, decodeBlock } from '../../ipam/index.js'
import type { BgpReads, FibStats, IpamReads } from './deps.js'

/** The speaker's reads as the API wants them: its Loc-RIB pages, its RIBs and its peers' real Adj-RIB-Outs. */
export function speakerReads(speaker: BgpSpeaker): BgpReads {
  let version = 0
  // For the lifetime of the speaker: the agent reads its RIB until it stops.
  speaker.subscribeDeltas(() => version++)
  // The sorted copy starts now (the agent builds this with an empty RIB), not at the first page.
  speaker.locRibPage(1)
  return {
    locRibPage: (limit, after) => speaker.locRibPage(limit, after),
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
      return speaker.locRibSize
    },
    peerStatus: () => speaker.peerStatus(),
    transitions: (q) => speaker.transitions.recent(q),
    locRibPrefixes: () => speaker.locRibPrefixes(),
    best: (prefix) => speaker.best(prefix),
    adjRibIn: (name) => speaker.adjRibIn(name),
    adjRibOut: (name) => speaker.adjRibOut(name),
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
