// When the agent claims its node's next IPAM block ahead of the pods: after each ADD, judged from what the Ipam
// holds of the node's blocks (no read), and at start. The claim itself is ipam/'s (Ipam.claimAhead); this keeps
// one in flight, logs and counts what it claimed, and never lets a failure reach an ADD (the next ADD tries again).

import { AsyncResource } from 'node:async_hooks'
import type { Family } from '../net/index.js'
import type { AheadOutcome, Ipam } from '../ipam/index.js'

/** After a check that could claim nothing (at maxBlocksPerHost, the pools full, the config against it), the next waits this long. */
const HOLD_MS = 60_000

export interface ClaimAheadOptions {
  readonly ipam: Ipam
  readonly node: string
  /** Claim when the node's blocks of a family have fewer free addresses than this; 0: never; undefined: a quarter of a block. */
  readonly below?: number | undefined
  readonly log?: ((msg: string, fields: Record<string, unknown>) => void) | undefined
  readonly now?: () => number
}

export class ClaimAhead {
  /** Blocks claimed ahead since start (pinto_ipam_blocks_claimed_ahead_total). */
  claimed = 0
  /** Checks that failed (the datastore, a lost race past the retries); each is tried again after the next ADD. */
  failed = 0
  private running: Promise<void> | undefined
  /** Per family, why no check is due yet: ADDs to go (the blocks had room for them) or a time. */
  private readonly holds = new Map<Family, { adds: number; untilMs: number }>()
  /** The last reason a check could not claim, logged when it changes. */
  private lastRefusal = ''

  /** The context the service was made in: a check runs there, not in the ADD's that started it (it is no part of that ADD). */
  private readonly home = new AsyncResource('pinto.ipam.claim-ahead')

  constructor(private readonly options: ClaimAheadOptions) {}

  /** Called after an ADD for this node gave addresses of `families`, and at start: starts a check where one is due. */
  note(families: readonly Family[]): void {
    const { ipam, node, below } = this.options
    if (below === 0 || this.running !== undefined) return
    const now = (this.options.now ?? Date.now)()
    for (const family of families) {
      const hold = this.holds.get(family)
      if (hold !== undefined) {
        hold.adds--
        if (hold.adds > 0 || now < hold.untilMs) continue
        this.holds.delete(family)
      }
      const room = ipam.headroom(node, family)
      if (room !== undefined && room.free >= (below ?? room.blockSize / 4)) continue
      this.running = this.home.runInAsyncScope(() => this.check(family)).finally(() => (this.running = undefined))
      return
    }
  }

  private async check(family: Family): Promise<void> {
    const { ipam, node, below, log } = this.options
    let r: AheadOutcome
    try {
      r = await ipam.claimAhead(node, family, below)
    } catch (err) {
      this.failed++
      log?.('claiming an IPAM block ahead failed; tried again after the next ADD', { family, err: (err as Error).message })
      return
    }
    const now = (this.options.now ?? Date.now)()
    switch (r.outcome) {
      case 'claimed':
        this.claimed++
        this.lastRefusal = ''
        log?.('claimed an IPAM block ahead of the pods', { block: r.block, freeBefore: r.free, below: r.below })
        return
      case 'enough':
        // No ADD can take the blocks below the threshold before this many more.
        this.holds.set(family, { adds: r.free - (r.below ?? 0) + 1, untilMs: 0 })
        return
      case 'no-block':
      case 'limit':
      case 'exhausted':
      case 'not-allowed': {
        this.holds.set(family, { adds: 0, untilMs: now + HOLD_MS })
        const why = r.reason ?? (r.outcome === 'no-block' ? `the node holds no IPv${family} block yet (its first pod claims one)` : r.outcome)
        if (why !== this.lastRefusal) log?.('not claiming an IPAM block ahead', { family, reason: why, free: r.free })
        this.lastRefusal = why
        return
      }
    }
  }

  /** Resolves when no check is running (close waits for it, tests too). */
  async settled(): Promise<void> {
    await this.running
  }
}
