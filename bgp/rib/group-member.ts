// One peer's Adj-RIB-Out as a member of an update group (update-group.ts): the batches its group hands it,
// taken at the pace its session reads them, or a table of its own while it catches up, until it rejoins.
// It decides no export; what it is sent is its group's round or its own table's.

import type { PathAttributes } from '../codec/attributes.js'
import type { Prefix } from '../codec/nlri.js'
import { PeerRibOut } from './adj-rib-out.js'
import type { AdjRibOut, FamilyKey, OutBatch, RibPeer } from './types.js'
import { ROUND, type GroupHost, type UpdateGroup } from './update-group.js'

/** `b` as its first `n` prefixes (withdrawals first) and the rest, neither of them shared. */
function split(b: OutBatch, n: number): [OutBatch, OutBatch] {
  const { packed: _, ...plain } = b
  const w = Math.min(n, b.withdraw.length)
  const a = n - w
  return [
    { ...plain, withdraw: b.withdraw.slice(0, w), announce: b.announce.slice(0, a) },
    { ...plain, withdraw: b.withdraw.slice(w), announce: b.announce.slice(a) },
  ]
}

/**
 * One peer's Adj-RIB-Out as a member of an update group, or on its own while it catches up (a new session,
 * a member that fell behind, a refresh): then it rejoins its group once both have nothing left to send.
 */
export class GroupMember implements AdjRibOut {
  private group: UpdateGroup | undefined
  private solo: PeerRibOut | undefined
  /** Batches handed over by the group, not yet taken. */
  private fifo: OutBatch[] = []
  private head = 0
  /** Prefixes in the fifo. */
  backlog = 0
  /** Destinations the group holds that this member was not sent in its dump: they come with the group's next rounds. */
  missing: Set<number> | undefined
  private readonly listeners: (() => void)[] = []

  constructor(
    readonly peer: RibPeer,
    private readonly host: GroupHost,
  ) {
    const group = host.groupFor(peer)
    // Nothing sent by the group yet: its queue holds all this peer is to be sent.
    if (group.out.size === 0) {
      this.enter(group)
      return
    }
    // Otherwise the group's table, encoded once for every peer joining it, brings it where the group is.
    const dump = group.dumpFor(peer.id)
    if (dump !== undefined) {
      this.enter(group)
      if (dump.missing.size > 0) this.missing = dump.missing
      // The dump's list is this joiner's own (its batches are shared): it becomes the fifo, not a copy.
      this.fifo = dump.batches
      for (const b of dump.batches) this.backlog += b.announce.length + b.withdraw.length
    } else {
      this.startSolo()
      const solo = this.solo!
      for (const d of host.rib.indices()) {
        host.rib.settle(d)
        solo.offer(d)
      }
    }
  }

  get pending(): number {
    return this.backlog + (this.solo?.pending ?? this.group?.out.pending ?? 0)
  }

  get size(): number {
    if (this.solo !== undefined) return this.solo.size
    return this.group === undefined ? 0 : this.group.out.size - this.group.heldBy(this.peer.id) - (this.missing?.size ?? 0)
  }

  /** Whether it sends on its own now (for tests and the API). */
  get grouped(): boolean {
    return this.group !== undefined
  }

  onPending(listener: () => void): void {
    this.listeners.push(listener)
  }

  notify(): void {
    for (const l of this.listeners) l()
  }

  /** A round's batches for this member. No signal: the group's queue, which they come from, was pending already. */
  deliver(batches: readonly OutBatch[]): void {
    for (const b of batches) {
      this.fifo.push(b)
      this.backlog += b.announce.length + b.withdraw.length
    }
  }

  take(maxPrefixes: number): OutBatch[] {
    if (this.backlog === 0) {
      if (this.solo !== undefined) {
        const batches = this.solo.take(maxPrefixes)
        if (this.solo.pending === 0) this.rejoin()
        return batches
      }
      if (this.group !== undefined && this.group.out.pending > 0 && this.group.mayProduce()) this.group.produce(Math.min(maxPrefixes, ROUND))
    }
    // The common case, a member taking all it was handed: the fifo itself is the answer.
    if (this.head === 0 && this.backlog <= maxPrefixes && this.fifo.length > 0) {
      const all = this.fifo
      this.fifo = []
      this.backlog = 0
      if (this.solo !== undefined && this.solo.pending === 0) this.rejoin()
      return all
    }
    const out: OutBatch[] = []
    let taken = 0
    while (this.head < this.fifo.length && taken < maxPrefixes) {
      const b = this.fifo[this.head]!
      const n = b.announce.length + b.withdraw.length
      if (taken + n <= maxPrefixes) {
        this.head++
        taken += n
        out.push(b)
        continue
      }
      // A round bigger than this pull: the part taken and the rest are this member's own batches now.
      const [part, rest] = split(b, maxPrefixes - taken)
      this.fifo[this.head] = rest
      taken = maxPrefixes
      out.push(part)
    }
    this.backlog -= taken
    if (this.head === this.fifo.length) {
      this.fifo = []
      this.head = 0
    }
    if (this.backlog === 0 && this.solo !== undefined && this.solo.pending === 0) this.rejoin()
    return out
  }

  refresh(family?: FamilyKey): void {
    if (this.group !== undefined) this.leaveGroup()
    this.solo!.refresh(family)
  }

  entries(): Iterable<{ prefix: Prefix; attributes: PathAttributes; nextHop: readonly string[] }> {
    if (this.solo !== undefined) return this.solo.entries()
    return this.group === undefined ? [] : this.group.out.entries(this.peer.id)
  }

  /** The session went down: the member leaves, with all it held. */
  clear(): void {
    this.fifo = []
    this.head = 0
    this.backlog = 0
    if (this.solo !== undefined) {
      this.solo.clear()
      this.host.soloEnded(this.solo)
      this.solo = undefined
    }
    if (this.group !== undefined) this.exit()
  }

  /**
   * Out of the group onto a table of its own, from where the group stands (what it holds less this peer's
   * own paths, and its queue); batches already handed over still go first. Too slow a reader, or a refresh.
   */
  leaveGroup(): void {
    const group = this.group!
    this.startSolo()
    const missing = this.missing
    this.missing = undefined
    this.solo!.startFrom(group.out, (d) => group.sentBy(d, this.peer.id) || missing?.has(d) === true)
    this.exit()
  }

  private startSolo(): void {
    const solo = new PeerRibOut(this.peer, this.host.rib)
    solo.onPending(() => this.notify())
    this.solo = solo
    this.host.soloStarted(solo)
  }

  /**
   * Everything sent on its own: into the group for its export as it stands now, once that group has sent
   * all it has queued too. Both then hold the Loc-RIB as it is, this peer's own paths aside.
   */
  private rejoin(): void {
    const group = this.host.groupFor(this.peer)
    while (group.out.pending > 0) group.produce()
    const solo = this.solo!
    solo.clear()
    this.host.soloEnded(solo)
    this.solo = undefined
    this.enter(group)
  }

  private enter(group: UpdateGroup): void {
    this.group = group
    group.members.set(this.peer.id, this)
    group.membershipChanged()
  }

  private exit(): void {
    this.missing = undefined
    const group = this.group!
    group.members.delete(this.peer.id)
    group.membershipChanged()
    this.group = undefined
    if (group.members.size === 0) this.host.groupEmpty(group)
  }
}
