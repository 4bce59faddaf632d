// The UPDATEs one Established session receives, decoded, on their way into the RIB port: RFC 7606 actions
// (treat-as-withdraw, AFI/SAFI disable of the one family named), refusals counted per kind and logged once
// per burst, End-of-RIB, and the maximum-prefix limit. Owns no socket, timer or FSM: a limit that stops
// the session is handed back.

import type { Logger } from 'pino'
import { Afi, CeaseSubcode, ErrorAction, ErrorCode, Safi, familyKey, notification, reconcileAs4, type BgpError, type NotificationMessage, type UpdateMessage } from '../codec/index.js'
import type { FamilyKey, PeerSessionInfo, RibPeer } from '../rib/types.js'
import type { Refusal } from '../rib/validate.js'
import type { Clock } from './clock.js'
import type { Negotiated } from './negotiate.js'
import type { ResolvedPeerConfig } from './peer-config.js'
import { familyName, type PeerCounters } from './peer-status.js'
import { Refusals } from './refusals.js'
import type { RibPort } from './rib-port.js'

export interface ReceiverDeps {
  readonly rib: RibPort
  readonly clock: Clock
  readonly log: Logger
  readonly counters: PeerCounters
  readonly config: () => ResolvedPeerConfig
  /** The peer's End-of-RIB for a family: graceful restart's stale routes of that family may go. */
  readonly endOfRib: (family: FamilyKey) => void
  /** A problem the peer's status shows as its last error (the session stays up). */
  readonly problem: (text: string) => void
  /** The maximum-prefix limit says stop: with this NOTIFICATION, restarting after `idleHoldTime` s. */
  readonly limitReached: (notification: NotificationMessage, idleHoldTime: number) => void
}

const IPV4_UNICAST = familyKey(Afi.IPV4, Safi.UNICAST)

export class UpdateReceiver {
  /** UPDATE sections refused, by kind (validation, RFC 8212, RFC 7606), since the peer was made. */
  readonly refusals = new Refusals()
  /** Families whose End-of-RIB the peer has sent this session. */
  private readonly eorReceived = new Set<FamilyKey>()
  /** Families disabled by an RFC 7606 AFI/SAFI-disable error for this session. */
  private readonly disabled = new Set<FamilyKey>()
  private info: { readonly session: Negotiated; readonly info: PeerSessionInfo } | undefined
  private maxPrefixWarned = false

  constructor(private readonly deps: ReceiverDeps) {}

  /** A new session: every family enabled again, no End-of-RIB seen. */
  reset(): void {
    this.disabled.clear()
    this.eorReceived.clear()
  }

  /** The peer has sent End-of-RIB for every one of `families`: its initial table is in. */
  synced(families: ReadonlySet<FamilyKey>): boolean {
    for (const f of families) if (!this.eorReceived.has(f)) return false
    return true
  }

  /** Hands one UPDATE to the RIB; returns whether the RIB changed (the caller flushes). */
  receive(peer: RibPeer, s: Negotiated, u: UpdateMessage): boolean {
    const rib = this.deps.rib
    const info = this.sessionInfo(s)
    if (u.endOfRib) {
      const f = familyKey(u.endOfRib.afi, u.endOfRib.safi)
      this.deps.log.info({ family: familyName(f) }, 'End-of-RIB received')
      this.eorReceived.add(f)
      this.deps.endOfRib(f)
      rib.endOfRib(peer, f)
      return true
    }
    const attrs = s.as4 ? u.attributes : reconcileAs4(u.attributes)
    for (const e of u.familyErrors ?? []) this.familyError(peer, s, e)
    const error = u.routesError
    const withdrawAll = error !== undefined && error.action === ErrorAction.TREAT_AS_WITHDRAW
    if (error) this.deps.log.warn({ code: error.code, subcode: error.subcode, action: error.actionName }, `malformed UPDATE: ${error.message}`)
    const v4 = !this.disabled.has(IPV4_UNICAST)
    if (u.withdrawn.length > 0 && v4) {
      this.deps.counters.prefixesWithdrawnIn += u.withdrawn.length
      rib.receive(peer, info, u.withdrawn, undefined)
    }
    if (withdrawAll) this.refused({ kind: 'treat-as-withdraw', reason: `malformed UPDATE treated as withdraw (RFC 7606): ${error.message}` })
    const announced = withdrawAll ? undefined : attrs
    if (u.nlri.length > 0 && v4) this.refused(rib.receive(peer, info, u.nlri, announced))
    if (u.nlriColumns && v4) this.refused(rib.receiveIpv4(peer, info, u.nlriColumns, announced))
    if (u.mpUnreach && u.mpUnreach.raw === undefined) {
      const f = familyKey(u.mpUnreach.afi, u.mpUnreach.safi)
      if (s.families.has(f) && !this.disabled.has(f)) rib.receive(peer, info, u.mpUnreach.withdrawn, undefined)
    }
    if (u.mpReach && u.mpReach.raw === undefined) {
      const f = familyKey(u.mpReach.afi, u.mpReach.safi)
      if (s.families.has(f) && !this.disabled.has(f)) {
        const cols = u.mpReach.nlriColumns
        this.refused(cols !== undefined ? rib.receiveIpv6(peer, info, cols, announced, u.mpReach.nextHop) : rib.receive(peer, info, u.mpReach.nlri, announced, u.mpReach.nextHop))
      }
    }
    this.checkMaxPrefixes(peer)
    return true
  }

  /**
   * A malformed MP_REACH_NLRI / MP_UNREACH_NLRI naming `e.family` (RFC 4760 §7, RFC 7606 §7.11): the peer's
   * routes of that family go and the family is ignored for the rest of the session; other families and the
   * rest of the UPDATE are untouched. A family not negotiated holds nothing and is ignored already.
   */
  private familyError(peer: RibPeer, s: Negotiated, e: BgpError): void {
    const f = e.family
    if (f === undefined) return
    const name = familyName(f)
    const negotiated = s.families.has(f)
    const first = negotiated && !this.disabled.has(f)
    const outcome = !negotiated ? 'not negotiated, nothing to delete' : first ? 'its routes deleted, the family ignored for the rest of this session' : 'the family is ignored already'
    this.deps.problem(`received a malformed UPDATE for ${name} (${outcome}): ${e.message}`)
    this.refused({ kind: 'afi-safi-disable', reason: `malformed UPDATE for ${name} (RFC 7606 §7.11, ${outcome}): ${e.message}` })
    if (!first) return
    this.disabled.add(f)
    this.deps.rib.dropFamily(peer, f)
    this.deps.log.warn({ family: name, code: e.code, subcode: e.subcode }, `family disabled for the rest of this session (RFC 4760 §7, RFC 7606 §7.11): ${e.message}`)
  }

  /** Families disabled for this session by a malformed MP attribute, by name. */
  get disabledFamilies(): string[] {
    return [...this.disabled].map(familyName)
  }

  /** What the RIB keeps of the session with each path: one object per session, not one per UPDATE. */
  private sessionInfo(s: Negotiated): PeerSessionInfo {
    if (this.info?.session !== s) this.info = { session: s, info: { routerId: s.peerRouterId } }
    return this.info.info
  }

  /** Counts a refused UPDATE section by kind, and logs the first of each burst. */
  private refused(r: Refusal | undefined): void {
    if (r === undefined) return
    const line = this.refusals.record(r.kind, r.reason, this.deps.clock.now())
    if (line !== undefined) this.deps.log.warn({ kind: line.kind, ...(line.unlogged > 0 ? { alsoRefusedSinceLastLog: line.unlogged } : {}) }, `UPDATE refused: ${line.reason}`)
  }

  private checkMaxPrefixes(peer: RibPeer): void {
    const max = this.deps.config().maxPrefixes
    if (!max) return
    const { accepted } = this.deps.rib.counts(peer)
    if (accepted <= max.limit) {
      this.maxPrefixWarned = false
      return
    }
    if (max.action === 'warn') {
      if (!this.maxPrefixWarned) this.deps.log.warn({ accepted, limit: max.limit }, 'maximum prefix limit exceeded')
      this.maxPrefixWarned = true
      return
    }
    // RFC 4486 §4: the data names the family and the limit.
    const data = Buffer.alloc(7)
    data.writeUInt16BE(Afi.IPV4, 0)
    data[2] = Safi.UNICAST
    data.writeUInt32BE(max.limit, 3)
    this.deps.limitReached(notification(ErrorCode.CEASE, CeaseSubcode.MAXIMUM_NUMBER_OF_PREFIXES_REACHED, { data }), max.restartAfter ?? 60)
  }
}
