// One pull's prefixes grouped into UPDATE batches: withdrawals per family, announcements per export result
// (prefixes sent with one attribute set and next hop share a batch). Pure; it knows no peer or session.

import type { Prefix } from '../codec/nlri.js'
import type { OutRoute } from './export.js'
import type { OutBatch } from './types.js'

const UNICAST = 1

/** Prefixes that go out with one attribute set. */
interface Group {
  readonly route: OutRoute
  readonly afi: number
  readonly announce: Prefix[]
}

export class BatchBuilder {
  private readonly withdrawals: [Prefix[], Prefix[]] = [[], []]
  private readonly groups = new Map<string, Group>()
  /** By result object first: shared export results repeat across prefixes, and the key string is long. */
  private readonly byRoute = new Map<OutRoute, Group>()

  withdraw(prefix: Prefix): void {
    this.withdrawals[prefix.afi - 1]!.push(prefix)
  }

  announce(prefix: Prefix, out: OutRoute): void {
    let g = this.byRoute.get(out)
    if (g === undefined) {
      const gk = `${prefix.afi}${out.key}`
      g = this.groups.get(gk)
      if (g === undefined) this.groups.set(gk, (g = { route: out, afi: prefix.afi, announce: [] }))
      this.byRoute.set(out, g)
    }
    g.announce.push(prefix)
  }

  /**
   * The batches, withdrawals first. `shared`: several sessions that encode alike send these very batches,
   * so each carries a slot for the UPDATEs the first of them packs.
   */
  batches(shared = false): OutBatch[] {
    const batches: OutBatch[] = []
    for (let i = 0; i < 2; i++) {
      const withdraw = this.withdrawals[i]!
      if (withdraw.length > 0) batches.push({ afi: i + 1, safi: UNICAST, announce: [], withdraw, ...(shared ? { packed: {} } : {}) })
    }
    for (const g of this.groups.values()) {
      batches.push({
        afi: g.afi,
        safi: UNICAST,
        attributes: g.route.attributes,
        ...(g.route.nextHop.length > 0 ? { nextHop: g.route.nextHop } : {}),
        announce: g.announce,
        withdraw: [],
        encoded: g.route.encoded,
        ...(shared ? { packed: {} } : {}),
      })
    }
    return batches
  }
}
