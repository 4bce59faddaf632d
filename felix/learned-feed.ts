// felix's calculation graph for learned routes: the speaker's Loc-RIB deltas into the desired table, after
// the rules that say which learned routes the kernel gets (not service ranges, not prefixes routed
// statically, a block through the node holding its affinity). Numbers in, numbers out; the agent only
// wires the speaker's deltas to apply() and sets the rules from the cluster.

import {
  DELTA_LOCAL,
  DELTA_WITHDRAWN,
  formatPrefix,
  ipv6Prefix,
  kernelMetricOf,
  parsePrefix,
  type BestPath,
  type LocRibDeltas,
  type NextHopTable,
  type Path,
  type Prefix,
} from '../bgp/index.js'
import { deepEqual } from '../config/index.js'
import { preferAffineNodes, type AffinityConflict, type NextHop } from './block-owners.js'
import type { DesiredTable } from './desired-table.js'
import type { LearnedRoute } from './desired-state.js'
import { formatIpv4, ipv4Within, ipv6Within, V4PrefixMap, V6PrefixMap, type Family } from '../net/index.js'

/** What the feed reads of the speaker's Loc-RIB besides its deltas (BgpSpeaker is one). */
export interface LocRibSource {
  /** Every destination with a best path, as deltas in batches (the streaming full walk). */
  walkLocRib(visit: (deltas: LocRibDeltas) => void): void
  best(prefix: Prefix): BestPath | undefined
  /** Every path of the prefix, best or not. */
  paths(prefix: Prefix): readonly Path[]
  /** The next hops the deltas name by id. */
  readonly nextHops: NextHopTable
}

/** What decides which learned routes felix programs, besides the Loc-RIB itself. */
export interface ProgramRules {
  /** This node: its own blocks never come from BGP. */
  readonly me: string
  /** Service ranges other nodes originate: kube-proxy owns them (Calico's rejectcidrs). */
  readonly services: readonly string[]
  /** Block CIDR (canonical) -> the node holding its affinity: a block goes to that node when it announces it. */
  readonly owners: ReadonlyMap<string, string>
  /** Prefixes (canonical) felix routes statically instead (a peer's reachableBy). */
  readonly fixed: readonly string[]
  /** Node address -> node name, for the next hops of owned blocks. */
  readonly nodeOfAddress: ReadonlyMap<string, string>
}

const NO_RULES: ProgramRules = { me: '', services: [], owners: new Map(), fixed: [], nodeOfAddress: new Map() }

/** An IPv6 network address with its host bits clear: `addr` itself unless a peer sent bits past the length. */
function network6(addr: Uint8Array, len: number): Uint8Array {
  if (len >= 128) return addr
  let host = addr[len >> 3]! & (0xff >> (len & 7))
  for (let i = (len >> 3) + 1; i < 16; i++) host |= addr[i]!
  return host === 0 ? addr : ipv6Prefix(addr, len).addr
}

/**
 * The Loc-RIB's deltas into felix's desired table: each changed destination becomes a set or a delete of
 * one learned route (best paths from peers, their next hops by id, LOCAL_PREF as the kernel metric), after
 * the rules above. Blocks with an affine owner (a few) are worked out together from their paths, as
 * preferAffineNodes says; everything else takes numbers only.
 */
export class LearnedFeed {
  private rules = NO_RULES
  /** The rules but the owners, which change as blocks are claimed and are compared block by block. */
  private rulesKey: readonly unknown[] | undefined
  private services4: { readonly net: number; readonly len: number }[] = []
  private services6: { readonly net: Uint8Array; readonly len: number }[] = []
  private readonly owned4 = new V4PrefixMap()
  private readonly owned6 = new V6PrefixMap()
  private readonly fixed4 = new V4PrefixMap()
  private readonly fixed6 = new V6PrefixMap()
  private readonly hops: number[] = []
  /** Affinity conflicts by block, kept per block so one block's change re-resolves that block alone. */
  private readonly conflicts = new Map<string, AffinityConflict>()

  constructor(
    private readonly rib: LocRibSource,
    private readonly desired: DesiredTable,
    private readonly onConflicts: (conflicts: readonly AffinityConflict[]) => void,
  ) {}

  /**
   * New rules. A change of services, static routes or node addresses works out every learned route again
   * (a streaming walk of the Loc-RIB); a change of block owners (a block claimed or released somewhere in
   * the cluster) re-resolves the blocks whose owner changed, nothing else.
   */
  setRules(rules: ProgramRules): void {
    const before = this.rules.owners
    const key = [rules.me, rules.services, rules.fixed, rules.nodeOfAddress]
    this.rules = rules
    this.owned4.clear()
    this.owned6.clear()
    for (const block of rules.owners.keys()) this.addTo(block, this.owned4, this.owned6)
    if (this.rulesKey === undefined || !deepEqual(key, this.rulesKey)) {
      this.rulesKey = key
      this.services4 = []
      this.services6 = []
      for (const c of rules.services) {
        const p = parsePrefix(c)
        if (p.afi === 1) this.services4.push({ net: p.addr, len: p.len })
        else this.services6.push({ net: ipv6Prefix(p.addr, p.len).addr, len: p.len })
      }
      this.fixed4.clear()
      this.fixed6.clear()
      for (const f of rules.fixed) this.addTo(f, this.fixed4, this.fixed6)
      this.reseed()
      return
    }
    const changed: string[] = []
    for (const [block, owner] of rules.owners) if (before.get(block) !== owner) changed.push(block)
    for (const block of before.keys()) if (!rules.owners.has(block)) changed.push(block)
    if (changed.length > 0) this.resolveBlocks(changed)
  }

  private addTo(text: string, v4: V4PrefixMap, v6: V6PrefixMap): void {
    const p = parsePrefix(text)
    if (p.afi === 1) v4.set(p.addr, p.len, 1)
    else v6.set(ipv6Prefix(p.addr, p.len).addr, p.len, 1)
  }

  /** Every learned route from the Loc-RIB again (start-up, new rules). */
  reseed(): void {
    this.rib.walkLocRib((batch) => this.apply(batch, false))
    this.conflicts.clear()
    this.resolveBlocks([...this.rules.owners.keys()])
  }

  /** One flush's changes (read during the call only, as the RIB reuses the batch). */
  apply(batch: LocRibDeltas, owned = true): void {
    let touched: string[] | undefined
    const d = this.desired
    for (let i = 0; i < batch.count; i++) {
      const family = batch.family(i)
      const len = batch.len(i)
      const addr4 = family === 4 ? batch.ipv4(i) : 0
      const addr6 = family === 6 ? batch.ipv6(i) : undefined
      const net6 = addr6 !== undefined && (this.owned6.size > 0 || this.fixed6.size > 0 || this.services6.length > 0) ? network6(addr6, len) : addr6
      if (family === 4 ? this.owned4.size > 0 && this.owned4.has(addr4, len) : this.owned6.size > 0 && this.owned6.has(net6!, len)) {
        if (owned) (touched ??= []).push(family === 4 ? `${formatIpv4(addr4)}/${len}` : formatPrefix(ipv6Prefix(net6!, len)))
        continue
      }
      const n = batch.hopCount(i)
      if ((batch.flags(i) & (DELTA_WITHDRAWN | DELTA_LOCAL)) !== 0 || n === 0 || this.excluded(family, addr4, net6, len)) {
        d.delete(family, addr4, addr6, len)
        continue
      }
      const hops = this.hops
      hops.length = n
      for (let k = 0; k < n; k++) hops[k] = batch.hop(i, k)
      // A BGPFilter setPriority (or a Calico node's priority) is the kernel route's metric.
      d.set(family, addr4, addr6, len, hops, kernelMetricOf(batch.localPref(i)))
    }
    if (touched !== undefined) this.resolveBlocks(touched)
  }

  /** Whether a route is one felix leaves to others (a service range) or routes statically (a fixed prefix). */
  private excluded(family: Family, addr4: number, net6: Uint8Array | undefined, len: number): boolean {
    if (family === 6) {
      if (this.fixed6.size > 0 && this.fixed6.has(net6!, len)) return true
      const services = this.services6
      for (let i = 0; i < services.length; i++) if (len >= services[i]!.len && ipv6Within(services[i]!.net, services[i]!.len, net6!)) return true
      return false
    }
    if (this.fixed4.size > 0 && this.fixed4.has(addr4, len)) return true
    // Indexed: it runs for every learned route (an iterator each time until optimized).
    const services = this.services4
    for (let i = 0; i < services.length; i++) {
      const s = services[i]!
      if (len >= s.len && ipv4Within(s.net, s.len, addr4)) return true
    }
    return false
  }

  /**
   * The routes of `blocks` (canonical CIDRs) from every path the RIB holds for them: an owned block as
   * preferAffineNodes says (and its conflict, if any), a block no longer owned as any other learned route.
   */
  private resolveBlocks(blocks: readonly string[]): void {
    const { owners, me, nodeOfAddress } = this.rules
    const hopOf = (p: Path): NextHop | undefined => {
      const address = p.attrs.nextHop[0] ?? p.attrs.attrs.nextHop
      if (address === undefined) return undefined
      const nodeName = nodeOfAddress.get(address)
      return nodeName !== undefined ? { address, nodeName } : { address }
    }
    const learned: LearnedRoute[] = []
    const mine = new Map<string, string>()
    for (const block of blocks) {
      const owner = owners.get(block)
      if (owner !== undefined) mine.set(block, owner)
      this.conflicts.delete(block)
      const prefix = parsePrefix(block)
      const best = this.rib.best(prefix)
      if (best === undefined || best.path.peer === undefined) continue
      if (this.excluded(prefix.afi === 1 ? 4 : 6, prefix.afi === 1 ? prefix.addr : 0, prefix.afi === 2 ? ipv6Prefix(prefix.addr, prefix.len).addr : undefined, prefix.len)) continue
      const hops = new Map<string, NextHop>()
      for (const p of best.multipath.length > 0 ? best.multipath : [best.path]) {
        const h = hopOf(p)
        if (h !== undefined) hops.set(h.address, h)
      }
      const metric = kernelMetricOf(best.path.attrs.attrs.localPref)
      if (hops.size > 0) learned.push({ prefix: block, nextHops: [...hops.values()], ...(metric !== undefined ? { metric } : {}) })
    }
    const announcers = (prefix: string): NextHop[] => this.rib.paths(parsePrefix(prefix)).flatMap((p) => (p.peer === undefined ? [] : [hopOf(p)].filter((h): h is NextHop => h !== undefined)))
    const { routes, conflicts } = preferAffineNodes(learned, mine, announcers, me)
    for (const c of conflicts) this.conflicts.set(c.block, c)
    this.onConflicts([...this.conflicts.values()])
    const programmed = new Map(routes.map((r) => [r.prefix, r]))
    for (const block of blocks) {
      const p = parsePrefix(block)
      const family = p.afi === 1 ? 4 : 6
      const addr4 = p.afi === 1 ? p.addr : 0
      const addr6 = p.afi === 2 ? p.addr : undefined
      const r = programmed.get(block)
      const ids = r?.nextHops.map((h) => this.rib.nextHops.idOf(h.address)).filter((id) => id >= 0) ?? []
      if (r === undefined || ids.length === 0) this.desired.delete(family, addr4, addr6, p.len)
      else this.desired.set(family, addr4, addr6, p.len, ids, r.metric)
    }
  }
}
