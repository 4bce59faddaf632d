// The BGP speaker pinto-node embeds: a listener, the peers, and the RIB between them. The in-process
// API adds, changes and removes peers without touching unchanged sessions, originates and withdraws
// prefixes, reports Loc-RIB changes as typed deltas, and reads RIBs (the Loc-RIB a page at a time, each
// peer's real Adj-RIB-In and Adj-RIB-Out) and peer status. It owns sockets, never the kernel. Callers
// never reach the RIB: every flush the speaker's invariants need happens here.

import { createServer, type Server, type Socket } from 'node:net'
import { pino, type Logger } from 'pino'
import { CeaseSubcode, ErrorCode, notification, type PathAttributes, type Prefix } from './codec/index.js'
import { Rib } from './rib/rib.js'
import type { LocRibDeltas, NextHopTable } from './rib/loc-rib-delta.js'
import type { AdvertisedRoute, BestPath, LocRibChange, Path, RibPeer } from './rib/types.js'
import { LocRibPages, type PrefixPage } from './loc-rib-pages.js'
import { BgpPeer, type PeerStatus } from './session/peer.js'
import { needsReset, resolvePeerConfig, type PeerConfig } from './session/peer-config.js'
import { systemClock, type Clock } from './session/clock.js'
import { TransitionLog } from './session/transition-log.js'
import { fdOf, setListenerTtl, setTcpMd5Key } from './session/socket-options.js'

export interface SpeakerOptions {
  readonly asn: number
  readonly routerId: string
  /** Where to accept connections; false for none (every peer active). Default port 179 on all addresses. */
  readonly listen?: { readonly port?: number; readonly hosts?: readonly string[] } | false
  /** Set to reflect routes (RFC 4456); usually the router id. */
  readonly clusterId?: string
  readonly multipath?: boolean
  readonly rfc8212?: boolean
  /** We restarted: advertise the Restart State bit for this many seconds (RFC 4724). */
  readonly restartingFor?: number
  readonly logger?: Logger
  readonly clock?: Clock
  /**
   * Hold End-of-RIB until releaseEndOfRib(): a restarting node first originates what it owns, so
   * peers that kept its routes as stale never see them withdrawn (RFC 4724 §4.1).
   */
  readonly holdEndOfRib?: boolean
  /**
   * Spacing of each update group's rounds, ms per member and at most (default 0.05 and 500: 100 ms with
   * 2,000 clients); false: none. A change after a quiet spell always goes at once.
   */
  readonly roundPacing?: { readonly perMember: number; readonly max: number } | false
}

const ROUND_PACING = { perMember: 0.05, max: 500 }
const LISTEN_BACKLOG = 8192

export interface PeerChangeSummary {
  readonly added: readonly string[]
  readonly removed: readonly string[]
  /** Changed in a way that needed a new session. */
  readonly reset: readonly string[]
  /** Changed in place (policies, limits), the session kept. */
  readonly updated: readonly string[]
  readonly unchanged: readonly string[]
}

/** One of our own routes: the prefix and the attributes it is originated with. */
export interface OwnRoute {
  readonly prefix: Prefix
  readonly attrs?: Partial<PathAttributes>
}

export class BgpSpeaker {
  /** The tables; for this folder and its tests. Other folders use the methods below. */
  readonly rib: Rib
  /** Recent FSM transitions per configured peer. */
  readonly transitions = new TransitionLog()
  private readonly peers = new Map<string, BgpPeer>()
  /** Peer name by address, for incoming connections: a reflector has thousands of peers. */
  private readonly byAddress = new Map<string, string>()
  private readonly servers: Server[] = []
  /** Listeners whose TTL is 255 already, for GTSM peers. */
  private readonly maxTtl = new Set<Server>()
  private readonly log: Logger
  private readonly clock: Clock
  private nextPeerId = 1
  private readonly peerIds = new Map<string, number>()
  private readonly startedAt: number
  private boundPort: number | undefined
  private eorHeld: boolean
  private pages: LocRibPages | undefined

  constructor(private readonly opts: SpeakerOptions) {
    this.log = opts.logger ?? pino({ level: 'silent' })
    this.clock = opts.clock ?? systemClock
    this.startedAt = this.clock.now()
    this.eorHeld = opts.holdEndOfRib ?? false
    // Real time, whatever clock drives the sessions: a round's spacing is about the CPU it costs.
    const pacing = opts.roundPacing ?? ROUND_PACING
    this.rib = new Rib({
      localAsn: opts.asn,
      routerId: opts.routerId,
      ...(opts.clusterId !== undefined ? { clusterId: opts.clusterId } : {}),
      ...(opts.multipath !== undefined ? { multipath: opts.multipath } : {}),
      ...(opts.rfc8212 !== undefined ? { rfc8212: opts.rfc8212 } : {}),
      ...(pacing !== false ? { pacing: { ...pacing, now: () => performance.now(), later: (fn: () => void, ms: number) => void systemClock.setTimeout(fn, ms) } } : {}),
    })
  }

  get asn(): number {
    return this.opts.asn
  }

  get routerId(): string {
    return this.opts.routerId
  }

  /** The port the listener is bound to (useful with port 0 in tests). */
  get port(): number | undefined {
    return this.boundPort
  }

  /** Starts listening; peers added before or after start their sessions at once. */
  async start(): Promise<void> {
    const listen = this.opts.listen
    if (listen === false) return
    const hosts = listen?.hosts && listen.hosts.length > 0 ? listen.hosts : [undefined]
    let port = listen?.port ?? 179
    for (const host of hosts) {
      const server = createServer({ noDelay: true }, (socket) => this.onConnection(socket))
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        // A reflector's clients connect by the thousand at once: Node's default backlog (511) drops SYNs
        // past it and each dropped client waits a retransmission (1 s, then 3 s...). The kernel caps it
        // at net.core.somaxconn.
        server.listen({ port, backlog: LISTEN_BACKLOG, ...(host !== undefined ? { host } : {}) }, () => {
          server.off('error', reject)
          resolve()
        })
      })
      const addr = server.address()
      if (addr && typeof addr === 'object') port = addr.port
      this.boundPort = port
      this.servers.push(server)
    }
    for (const peer of this.peers.values()) this.keyListeners(peer)
    this.log.info({ port, hosts: hosts.filter((h) => h !== undefined) }, 'listening for BGP connections')
  }

  /**
   * Stops every session and the listener. `graceful`: close without NOTIFICATION so peers keep our
   * routes while we restart (RFC 4724); otherwise a Cease / Administrative Shutdown is sent.
   */
  async stop(opts: { graceful?: boolean; message?: string } = {}): Promise<void> {
    for (const peer of this.peers.values()) {
      peer.stop(
        opts.graceful
          ? { graceful: true, reason: 'the speaker is restarting' }
          : { reason: 'the speaker is stopping', ...(opts.message ? { notification: notification(ErrorCode.CEASE, CeaseSubcode.ADMINISTRATIVE_SHUTDOWN, { shutdownMessage: opts.message }) } : {}) },
      )
    }
    await Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))))
    this.servers.length = 0
  }

  private onConnection(socket: Socket): void {
    const remote = (socket.remoteAddress ?? '').replace(/^::ffff:/, '')
    const name = this.byAddress.get(remote)
    const peer = name === undefined ? undefined : this.peers.get(name)
    if (peer !== undefined) {
      peer.acceptConnection(socket)
      return
    }
    this.log.info({ remote }, 'connection from an address that is not a configured peer: refused')
    socket.destroy()
  }

  /**
   * Keys (or unkeys) the listeners for one peer's address with its TCP-MD5 password (accepted
   * connections inherit the key), and raises their TTL for a GTSM peer. A failure is the peer's,
   * which then takes no connection.
   */
  private keyListeners(peer: BgpPeer, remove = false): void {
    const c = peer.resolvedConfig
    if (c.password === undefined && (c.ttlSecurity === 0 || remove)) return
    const key = remove || c.password === undefined ? undefined : Buffer.from(c.password)
    const problems: string[] = []
    for (const server of this.servers) {
      const addr = server.address()
      const family = addr !== null && typeof addr === 'object' && addr.family === 'IPv6' ? 6 : 4
      if (family === 4 && c.address.includes(':')) continue
      try {
        if (c.password !== undefined) setTcpMd5Key(fdOf(server), family, c.address, key)
        // Left at 255 once set: other peers are not hurt by SYN-ACKs that can travel further.
        if (c.ttlSecurity > 0 && !remove && !this.maxTtl.has(server)) {
          setListenerTtl(fdOf(server), family)
          this.maxTtl.add(server)
        }
      } catch (err) {
        problems.push((err as Error).message)
      }
    }
    if (remove) return
    if (problems.length > 0) this.log.error({ peer: c.name, address: c.address }, `TCP-MD5 key not set on the listener: ${problems.join('; ')}`)
    peer.setListenerProblem(problems.length > 0 ? problems.join('; ') : undefined)
  }

  private restarting(): boolean {
    const window = this.opts.restartingFor ?? 0
    return window > 0 && this.clock.now() - this.startedAt < window * 1000
  }

  /** Drops `name`'s address from the index; another peer with that address (if any) takes it. */
  private forgetAddress(name: string, address: string): void {
    if (this.byAddress.get(address) !== name) return
    this.byAddress.delete(address)
    for (const [other, p] of this.peers) {
      if (p.address === address) {
        this.byAddress.set(address, other)
        return
      }
    }
  }

  addPeer(config: PeerConfig): void {
    if (this.peers.has(config.name)) throw new Error(`peer ${config.name} exists already`)
    const resolved = resolvePeerConfig(config, this.opts.asn)
    let id = this.peerIds.get(config.name)
    if (id === undefined) this.peerIds.set(config.name, (id = this.nextPeerId++))
    const peer = new BgpPeer(resolved, {
      rib: this.rib,
      clock: this.clock,
      log: this.log.child({ peer: config.name, address: config.address }),
      routerId: this.opts.routerId,
      peerId: id,
      restarting: () => this.restarting(),
      holdEndOfRib: () => this.eorHeld,
      onTransition: (t) => this.transitions.record({ peer: config.name, ...t }),
    })
    this.peers.set(config.name, peer)
    if (!this.byAddress.has(peer.address)) this.byAddress.set(peer.address, config.name)
    this.keyListeners(peer)
    peer.start()
  }

  removePeer(name: string, message = 'peer removed from the configuration'): boolean {
    const peer = this.peers.get(name)
    if (!peer) return false
    peer.stop({ notification: notification(ErrorCode.CEASE, CeaseSubcode.PEER_DECONFIGURED), reason: message })
    this.keyListeners(peer, true)
    this.peers.delete(name)
    this.forgetAddress(name, peer.address)
    this.transitions.forget(name)
    this.log.info({ peer: name }, message)
    return true
  }

  /** Replaces the set of peers: only what changed is touched (Calico's confd reload, session-preserving). */
  setPeers(configs: readonly PeerConfig[]): PeerChangeSummary {
    const summary = { added: [] as string[], removed: [] as string[], reset: [] as string[], updated: [] as string[], unchanged: [] as string[] }
    const wanted = new Map(configs.map((c) => [c.name, c]))
    for (const name of [...this.peers.keys()]) {
      if (!wanted.has(name)) {
        this.removePeer(name)
        summary.removed.push(name)
      }
    }
    for (const config of configs) {
      const current = this.peers.get(config.name)
      if (!current) {
        this.addPeer(config)
        summary.added.push(config.name)
        continue
      }
      const next = resolvePeerConfig(config, this.opts.asn)
      const prev = current.resolvedConfig
      if (needsReset(prev, next)) {
        current.stop({ notification: notification(ErrorCode.CEASE, CeaseSubcode.OTHER_CONFIGURATION_CHANGE), reason: 'configuration changed: the session starts again with it' })
        this.keyListeners(current, true)
        this.peers.delete(config.name)
        this.forgetAddress(config.name, current.address)
        this.addPeer(config)
        summary.reset.push(config.name)
      } else if (prev.importPolicy !== next.importPolicy || prev.exportPolicy !== next.exportPolicy || prev.maxPrefixes !== next.maxPrefixes || prev.kind !== next.kind) {
        current.reconfigure(next)
        // A policy change applies through soft resets, never a session reset.
        if (prev.importPolicy !== next.importPolicy && !current.refreshIn()) this.reimport(current)
        if (prev.exportPolicy !== next.exportPolicy) current.refreshOut()
        summary.updated.push(config.name)
      } else summary.unchanged.push(config.name)
    }
    // A removed peer's stale routes are swept from the RIB without a flush (BgpPeer.stop): flushed here,
    // the withdrawals reach the delta listeners and the other peers.
    if (summary.removed.length + summary.reset.length > 0) this.rib.flush()
    return summary
  }

  originate(prefix: Prefix, attrs?: Partial<PathAttributes>): void {
    this.rib.originate(prefix, attrs)
    this.rib.flush()
  }

  withdraw(prefix: Prefix): void {
    this.rib.withdrawOrigin(prefix)
    this.rib.flush()
  }

  /** Our own routes changed: `originate` (new, or with new attributes) and `withdraw` together, then one flush. */
  updateOrigins(originate: Iterable<OwnRoute>, withdraw: Iterable<Prefix> = []): void {
    for (const r of originate) this.rib.originate(r.prefix, r.attrs)
    for (const p of withdraw) this.rib.withdrawOrigin(p)
    this.rib.flush()
  }

  // ---- the Loc-RIB ------------------------------------------------------------------------------

  /** Calls `listener` with every batch of Loc-RIB changes; returns the unsubscribe function. */
  onLocRibChange(listener: (changes: readonly LocRibChange[]) => void): () => void {
    return this.rib.subscribe(listener)
  }

  /** Calls `listener` with each flush's Loc-RIB changes as typed deltas (read during the call only); returns the unsubscribe function. */
  subscribeDeltas(listener: (deltas: LocRibDeltas) => void): () => void {
    return this.rib.subscribeDeltas(listener)
  }

  /** Every destination with a best path, as deltas in batches (one buffer, reused): the streaming full walk. */
  walkLocRib(visit: (deltas: LocRibDeltas) => void, batch?: number): void {
    this.rib.walkLocRib(visit, batch)
  }

  /** The next hops the deltas name by id. */
  get nextHops(): NextHopTable {
    return this.rib.nextHops
  }

  best(prefix: Prefix): BestPath | undefined {
    return this.rib.best(prefix)
  }

  /** Every path of the prefix, best or not. */
  paths(prefix: Prefix): readonly Path[] {
    return this.rib.paths(prefix)
  }

  /** Destinations in the table (those emptied since the last flush included). */
  get locRibSize(): number {
    return this.rib.size
  }

  /** The prefix of every destination, in no given order (those emptied since the last flush included). */
  locRibPrefixes(): Iterable<Prefix> {
    return this.rib.prefixes()
  }

  /** The Loc-RIB's prefixes after `after` in prefix order, `limit` of them; a sorted copy is kept from the first call on. */
  locRibPage(limit: number, after?: Prefix): PrefixPage {
    if (this.pages === undefined) {
      const rib = this.rib
      const pages = new LocRibPages(function* () {
        for (const [prefix] of rib.locRib()) yield prefix
      })
      rib.subscribeDeltas((d) => pages.follow(d))
      this.pages = pages
    }
    return this.pages.page(limit, after)
  }

  /** The paths a peer sent us, after import policy; undefined when no peer has that name, empty unless Established. */
  adjRibIn(name: string): Iterable<Path> | undefined {
    const peer = this.peers.get(name)
    if (peer === undefined) return undefined
    const rp = peer.currentRibPeer
    return rp === undefined ? [] : this.rib.adjRibIn(rp)
  }

  /** What the peer's Adj-RIB-Out holds and has queued, as sent; undefined when no peer has that name, empty unless Established. */
  adjRibOut(name: string): Iterable<AdvertisedRoute> | undefined {
    const peer = this.peers.get(name)
    if (peer === undefined) return undefined
    return peer.advertised() ?? []
  }

  peerStatus(): PeerStatus[] {
    return [...this.peers.values()].map((p) => p.status())
  }

  peer(name: string): BgpPeer | undefined {
    return this.peers.get(name)
  }

  /** The RIB's view of an Established peer, for Adj-RIB-In / Adj-RIB-Out reads. */
  ribPeer(name: string): RibPeer | undefined {
    return this.peers.get(name)?.currentRibPeer
  }

  /** Without route refresh, import runs again over the routes the peer sent, kept as received. */
  private reimport(peer: BgpPeer): void {
    const rp = peer.currentRibPeer
    if (rp === undefined) return
    const r = this.rib.reimport(rp)
    this.rib.flush()
    this.log.info({ peer: peer.name, ...r }, 'import policy changed: import ran again over the routes kept as received (no route refresh)')
  }

  /** Soft reset: in asks the peer to resend (ROUTE-REFRESH), out re-advertises everything. */
  refresh(name: string, direction: 'in' | 'out'): boolean {
    const peer = this.peers.get(name)
    if (!peer) return false
    if (direction === 'in') return peer.refreshIn()
    peer.refreshOut()
    return true
  }

  /** Lets End-of-RIB go out to every peer whose initial table has been sent. */
  releaseEndOfRib(): void {
    if (!this.eorHeld) return
    this.eorHeld = false
    for (const p of this.peers.values()) p.flushOut()
  }

  /** Every configured peer is Established and has sent End-of-RIB for all its families. */
  synced(): boolean {
    for (const p of this.peers.values()) if (!p.synced) return false
    return true
  }

  get uptimeSeconds(): number {
    return Math.floor((this.clock.now() - this.startedAt) / 1000)
  }
}
