// Update groups (FRR's update-groups, GoBGP's peer groups): peers that export alike share one table of what
// was sent, so a change is exported and batched once for all of them and every member sends the same
// UPDATE bytes. A member's own routes (never sent back to it) are its exceptions. Pure: a paced group asks
// its host for the time and a wake-up, and owns no timer.

import type { Prefix } from '../codec/nlri.js'
import { exportKey, PeerRibOut, type RibView } from './adj-rib-out.js'
import type { OutRoute } from './export.js'
import { BatchBuilder } from './out-batches.js'
import { GroupDump } from './group-dump.js'
import { grown, touchedArray } from '../../net/index.js'
import type { GroupMember } from './group-member.js'
import { ribPeerWith, type OutBatch, type Policy, type RibPeer } from './types.js'

/** A prefix the group does not hold (in `prev`), or withdrew (in `src`). */
const NOT_HELD = -2
/** The source of our own routes. */
const LOCAL = -1
/** Prefixes one round takes from the group's queue. */
export const ROUND = 4000
/** Spacing, in spacings, while changes keep coming: the queue filled again within a spacing of the last round. */
const BURST = 4
/**
 * Destinations queued below which a refill is a few changes, not routes pouring in: they go one spacing
 * after the last round (a stream of single block changes would otherwise wait four spacings each).
 */
const BURST_MIN = 32
/**
 * Spacings without a member joining or leaving after which the group is settled: every session is up and
 * has its table, so few changes go a quarter spacing after the last round (at 2,000 members: 25 ms, not
 * 100). While members come and go (a cold start, each joiner's routes a change for all), a full spacing.
 */
const SETTLE = 3
/** Largest table a joining peer is sent from the group's dump; past it, joiners catch up on their own. */
const DUMP_LIMIT = 250_000

/** What update groups need of the RibOuts that own them. */
export interface GroupHost {
  readonly rib: RibView
  /** Prefixes a member may leave unread before it is taken out of its group as slow. */
  readonly slowLimit: number
  /** The group for `peer`'s export, as the peer stands now (made on first use). */
  groupFor(peer: RibPeer): UpdateGroup
  /** The group has no members left. */
  groupEmpty(group: UpdateGroup): void
  /** An Adj-RIB-Out of its own (a member catching up) starts or stops being offered changes. */
  soloStarted(out: PeerRibOut): void
  soloEnded(out: PeerRibOut): void
  /** Spacing of a group's rounds; undefined: a round whenever a member asks for one. */
  readonly pacing: RoundPacing | undefined
}

/**
 * Rounds no closer than a spacing of `perMember` ms per member (at most `max` ms) after the previous one,
 * BURST times that while changes keep coming (the next arrived within a spacing of the last round and
 * BURST_MIN or more wait), and a quarter of it once the group is settled (SETTLE): a round costs every
 * member a write, and while routes pour in (a cold start) each turn of the event loop would make one. A
 * change after a quiet spell goes at once. As FRR's subgroup coalesce time, scaled by the peer count.
 */
export interface RoundPacing {
  readonly perMember: number
  readonly max: number
  now(): number
  /** Calls `fn` once after `ms`. */
  later(fn: () => void, ms: number): void
}

const policyIds = new WeakMap<Policy, number>()
let nextPolicyId = 1

/** Peers with equal keys are sent the same for every path but their own (export.ts reads nothing else). */
export function groupKey(peer: RibPeer): string {
  const policy = peer.exportPolicy
  let pid = 0
  if (policy !== undefined) {
    pid = policyIds.get(policy) ?? 0
    if (pid === 0) policyIds.set(policy, (pid = nextPolicyId++))
  }
  const sorted = (s: ReadonlySet<number>): string => [...s].sort((a, b) => a - b).join(',')
  return `${exportKey(peer)}|${peer.asn} ${peer.rrClient} ${pid}|${sorted(peer.families)}|${sorted(peer.addPathSend)}|${peer.encoding ?? ''}`
}

/** What one round sent, prefix by prefix, for the members it must send something else. */
interface Round {
  readonly ds: number[]
  readonly prefixes: Prefix[]
  readonly routes: (OutRoute | undefined)[]
  /** Source peer id of what the group held before (NOT_HELD: nothing). */
  readonly prev: number[]
  /** Source peer id of what it sends now (NOT_HELD: a withdrawal). */
  readonly src: number[]
}

export class UpdateGroup {
  /** The group's table: what a member that is no path's source holds and has still to be sent. */
  readonly out: PeerRibOut
  readonly members = new Map<number, GroupMember>()
  /** Source peer id of each held destination's path as sent, by destination index (0: not held). */
  private sentFrom = touchedArray(Int32Array, 64)
  /** The held table by export result, once a peer joins a group that holds something. */
  private dump: GroupDump | undefined
  /** Held destinations per source peer id: a member holds the group's table less its own. */
  private readonly heldFrom = new Map<number, number>()
  /** When the last round was made (pacing's clock), and whether a wake-up for the next is set. */
  private lastRound = -Infinity
  private waking = false
  /** When the queue last went from empty to pending (pacing's clock). */
  private pendingSince = -Infinity
  /** When a member last joined or left (pacing's clock). */
  private lastMembership = -Infinity
  /** Rounds made, for the bench and tests. */
  rounds = 0

  constructor(
    readonly key: string,
    peer: RibPeer,
    id: number,
    private readonly host: GroupHost,
  ) {
    // The policy as it is now: a member whose policy changes leaves through refresh() and joins another.
    this.out = new PeerRibOut(ribPeerWith(peer, { id, name: `update group ${id}` }), host.rib)
    this.out.onPending(() => {
      if (host.pacing !== undefined) this.pendingSince = host.pacing.now()
      for (const m of this.members.values()) m.notify()
    })
  }

  /** How many of the group's held destinations came from `id` (a member holds the rest). */
  heldBy(id: number): number {
    return this.heldFrom.get(id) ?? 0
  }

  /** Whether `d` is held by the group as a path from `id`. */
  sentBy(d: number, id: number): boolean {
    return d < this.sentFrom.length && this.sentFrom[d] === id
  }

  private setSentFrom(d: number, src: number): void {
    if (d >= this.sentFrom.length) {
      let n = this.sentFrom.length * 2
      while (n <= d) n *= 2
      this.sentFrom = grown(this.sentFrom, n, true)
    }
    this.sentFrom[d] = src
  }

  /**
   * Whether a round may be made now. When pacing says not yet, a wake-up is set that tells the members
   * when it may (they find the group's queue pending and ask again).
   */
  mayProduce(): boolean {
    const pacing = this.host.pacing
    if (pacing === undefined) return true
    const spacing = this.spacing(pacing)
    const now = pacing.now()
    const burst = this.pendingSince - this.lastRound < spacing && this.out.pending >= BURST_MIN
    const settled = now - this.lastMembership >= SETTLE * spacing
    const wait = this.lastRound + spacing * (burst ? BURST : settled ? 1 / BURST : 1) - now
    if (wait <= 0) return true
    if (!this.waking) {
      this.waking = true
      pacing.later(() => {
        this.waking = false
        for (const m of this.members.values()) m.notify()
      }, wait)
    }
    return false
  }

  /** A member joined or left: the group is not settled for SETTLE spacings. */
  membershipChanged(): void {
    if (this.host.pacing !== undefined) this.lastMembership = this.host.pacing.now()
  }

  private spacing(pacing: RoundPacing): number {
    return Math.min(pacing.max, this.members.size * pacing.perMember)
  }

  /**
   * The group's whole table for a peer that joins it now, as shared batches (less the peer's own paths and
   * what the group has queued since it sent it: `missing`, which the joiner is sent with the next rounds);
   * undefined past DUMP_LIMIT. A join makes no round of its own once the dump is kept.
   */
  dumpFor(id: number): { batches: OutBatch[]; missing: Set<number> } | undefined {
    if (this.out.size > DUMP_LIMIT) return undefined
    if (this.dump === undefined) {
      // heldRoutes() gives each held destination as it is sent now: nothing may be queued while it is read.
      while (this.out.pending > 0) this.produce()
      const dump = new GroupDump()
      for (const [d, prefix, route] of this.out.heldRoutes()) dump.add(d, prefix, route, this.sentFrom[d]!)
      this.dump = dump
    }
    const missing = new Set<number>()
    for (const d of this.out.queuedHeld()) if (this.sentFrom[d] !== id) missing.add(d)
    return { batches: this.dump.batches(id, missing), missing }
  }

  /** Takes one round (up to `max` prefixes) from the group's queue and hands every member what it is to send of it. */
  produce(max = ROUND): void {
    this.rounds++
    if (this.host.pacing !== undefined) this.lastRound = this.host.pacing.now()
    let slow: GroupMember[] | undefined
    for (const m of this.members.values()) if (m.backlog >= this.host.slowLimit) (slow ??= []).push(m)
    if (slow !== undefined) for (const m of slow) m.leaveGroup()
    const round: Round = { ds: [], prefixes: [], routes: [], prev: [], src: [] }
    const members = this.members
    /** Round indices where a member is the source now or was before: its variant differs there. */
    let involved: Map<number, number[]> | undefined
    /** Round indices withdrawing what the group held: a joiner missing one is sent a variant. */
    let withdrawn: number[] | undefined
    const rib = this.host.rib
    if (this.dump !== undefined && this.out.size > DUMP_LIMIT) this.dump = undefined
    const dump = this.dump
    const batches = this.out.take(
      max,
      (d, prefix, out, wasHeld) => {
        const prev = wasHeld ? this.sentFrom[d]! : NOT_HELD
        const src = out === undefined ? NOT_HELD : (rib.bestPeer(d)?.id ?? LOCAL)
        if (prev !== NOT_HELD) {
          this.count(prev, -1)
          dump?.remove(d)
        }
        if (src === NOT_HELD) {
          this.setSentFrom(d, 0)
          if (prev !== NOT_HELD) (withdrawn ??= []).push(round.ds.length)
        } else {
          this.setSentFrom(d, src)
          this.count(src, 1)
          dump?.add(d, prefix, out!, src)
        }
        round.ds.push(d)
        round.prefixes.push(prefix)
        round.routes.push(out)
        round.prev.push(prev)
        round.src.push(src)
        const i = round.ds.length - 1
        if (members.has(src)) involve((involved ??= new Map<number, number[]>()), src, i)
        if (prev !== src && members.has(prev)) involve((involved ??= new Map<number, number[]>()), prev, i)
      },
      true,
    )
    const variants = new Variants(round, batches)
    let inRound: Set<number> | undefined
    // Handing a member its batches changes no membership.
    for (const m of members.values()) {
      const id = m.peer.id
      const own = involved?.get(id)
      const missing = m.missing
      // A joiner also differs where the round withdraws what it was never sent.
      const unsent = missing === undefined ? undefined : withdrawn?.filter((i) => missing.has(round.ds[i]!))
      const differs = own !== undefined || (unsent !== undefined && unsent.length > 0)
      m.deliver(differs ? variants.for(id, unsent === undefined ? own! : [...(own ?? []), ...unsent], missing) : batches)
      if (missing === undefined) continue
      // What the round sent is no longer missing.
      if (missing.size < round.ds.length) {
        inRound ??= new Set(round.ds)
        for (const d of missing) if (inRound.has(d)) missing.delete(d)
      } else for (const d of round.ds) missing.delete(d)
      if (missing.size === 0) m.missing = undefined
    }
  }

  private count(src: number, by: number): void {
    const n = (this.heldFrom.get(src) ?? 0) + by
    if (n === 0) this.heldFrom.delete(src)
    else this.heldFrom.set(src, n)
  }
}

function involve(involved: Map<number, number[]>, id: number, i: number): void {
  const list = involved.get(id)
  if (list === undefined) involved.set(id, [i])
  else list.push(i)
}

/**
 * What a member is sent of a round where it differs from the others: nothing of its own paths, a
 * withdrawal where one replaced another's, no withdrawal of what it was never sent (its own, or `missing`
 * from a joiner's dump). Built from the round's shared batches: a batch holding none of the member's
 * exceptions is handed over as it is (packed once for everyone), and only the few that do are copied.
 */
class Variants {
  /** The shared batch each of the round's prefixes went into, by prefix object; made on first use. */
  private batchOf: Map<Prefix, OutBatch> | undefined

  constructor(
    private readonly round: Round,
    private readonly shared: readonly OutBatch[],
  ) {}

  /** Member `id`'s batches, given the round indices where it may differ. */
  for(id: number, indices: readonly number[], missing?: ReadonlySet<number>): OutBatch[] {
    const round = this.round
    const drop = new Set<Prefix>()
    const withdrawals = new BatchBuilder()
    let extra = false
    for (const i of indices) {
      const prefix = round.prefixes[i]!
      const prev = round.prev[i]!
      const heldBefore = prev !== NOT_HELD && prev !== id && missing?.has(round.ds[i]!) !== true
      if (round.routes[i] !== undefined) {
        if (round.src[i] !== id) continue
        drop.add(prefix)
        if (heldBefore) {
          withdrawals.withdraw(prefix)
          extra = true
        }
      } else if (!heldBefore) drop.add(prefix)
    }
    if (drop.size === 0 && !extra) return this.shared as OutBatch[]
    const touched = new Set<OutBatch>()
    const batchOf = this.index()
    for (const p of drop) touched.add(batchOf.get(p)!)
    const out = extra ? withdrawals.batches() : []
    for (const b of this.shared) {
      if (!touched.has(b)) {
        out.push(b)
        continue
      }
      const { packed: _, ...plain } = b
      const announce = b.announce.filter((p) => !drop.has(p))
      const withdraw = b.withdraw.filter((p) => !drop.has(p))
      if (announce.length + withdraw.length > 0) out.push({ ...plain, announce, withdraw })
    }
    return out
  }

  private index(): Map<Prefix, OutBatch> {
    if (this.batchOf !== undefined) return this.batchOf
    const batchOf = new Map<Prefix, OutBatch>()
    for (const b of this.shared) {
      for (const p of b.withdraw) batchOf.set(p, b)
      for (const p of b.announce) batchOf.set(p, b)
    }
    return (this.batchOf = batchOf)
  }
}
