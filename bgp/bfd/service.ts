// The node's BFD: the port-3784 receive sockets (one per address family, GTSM by a kernel socket filter
// that drops any datagram not sent with TTL/hop limit 255, RFC 5881 §5), the demultiplexing of packets to
// sessions (§6.3: by Your Discriminator, else by the peer's address), and the set of sessions, changed
// in place. It decides nothing about BGP: state changes go to the listener.

import { randomInt } from 'node:crypto'
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram'
import type { Logger } from 'pino'
import { systemClock, type Clock } from '../session/clock.js'
import { attachSocketFilter, dgramFdOf, ttlFilter } from '../session/socket-options.js'
import { BFD_CONTROL_PORT, BfdPacketError, decodeControl } from './codec.js'
import { BfdSession, type BfdChange, type BfdSessionSpec, type BfdSessionStatus } from './session.js'

export interface BfdServiceOptions {
  readonly logger: Logger
  readonly clock?: Clock
  /** Receive port; 3784 unless a test needs another. */
  readonly port?: number
  readonly random?: () => number
}

export type BfdListener = (status: BfdSessionStatus, change: BfdChange) => void

export interface BfdCounters {
  /** Datagrams dropped before any session saw them (bad packet, no session). */
  readonly discarded: number
}

const sameSpec = (a: BfdSessionSpec, b: BfdSessionSpec): boolean =>
  a.peerAddress === b.peerAddress && a.localAddress === b.localAddress && a.family === b.family

export class BfdService {
  private readonly sessions = new Map<string, BfdSession>()
  private readonly byDiscr = new Map<number, BfdSession>()
  private readonly receivers = new Map<'ipv4' | 'ipv6', Promise<Socket>>()
  private readonly listeners = new Set<BfdListener>()
  private readonly log: Logger
  private discarded = 0

  constructor(private readonly opts: BfdServiceOptions) {
    this.log = opts.logger.child({ component: 'bfd' })
  }

  onChange(listener: BfdListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Makes the sessions those of `specs` (keyed by name): new ones start, changed intervals poll, gone ones stop. */
  async setSessions(specs: readonly BfdSessionSpec[]): Promise<{ added: string[]; removed: string[]; updated: string[] }> {
    const want = new Map(specs.map((s) => [s.name, s]))
    const added: string[] = []
    const removed: string[] = []
    const updated: string[] = []
    for (const [name, session] of [...this.sessions]) {
      const spec = want.get(name)
      if (spec === undefined || !sameSpec(spec, session.sessionSpec)) {
        this.remove(name)
        removed.push(name)
      }
    }
    for (const spec of specs) {
      const current = this.sessions.get(spec.name)
      if (current) {
        if (JSON.stringify(current.sessionSpec.params) !== JSON.stringify(spec.params)) {
          current.update(spec)
          updated.push(spec.name)
        }
        continue
      }
      await this.receiver(spec.family)
      let discr = randomInt(1, 0xffffffff)
      while (this.byDiscr.has(discr)) discr = randomInt(1, 0xffffffff)
      const session = new BfdSession(spec, discr, {
        clock: this.opts.clock ?? systemClock,
        log: this.log.child({ bfd: spec.name, peer: spec.peerAddress }),
        random: this.opts.random ?? Math.random,
        onChange: (s, change) => {
          for (const l of this.listeners) l(s.status(), change)
        },
      })
      this.sessions.set(spec.name, session)
      this.byDiscr.set(discr, session)
      try {
        await session.start()
      } catch (err) {
        this.remove(spec.name)
        throw err
      }
      added.push(spec.name)
    }
    return { added, removed, updated }
  }

  status(): BfdSessionStatus[] {
    return [...this.sessions.values()].map((s) => s.status())
  }

  session(name: string): BfdSessionStatus | undefined {
    return this.sessions.get(name)?.status()
  }

  get counters(): BfdCounters {
    return { discarded: this.discarded }
  }

  async close(): Promise<void> {
    for (const name of [...this.sessions.keys()]) this.remove(name)
    for (const r of this.receivers.values()) (await r.catch(() => undefined))?.close()
    this.receivers.clear()
  }

  private remove(name: string): void {
    const s = this.sessions.get(name)
    if (!s) return
    s.close()
    this.sessions.delete(name)
    this.byDiscr.delete(s.localDiscr)
  }

  private receiver(family: 'ipv4' | 'ipv6'): Promise<Socket> {
    let r = this.receivers.get(family)
    if (!r) {
      r = bindReceiver(family, this.opts.port ?? BFD_CONTROL_PORT, (msg, rinfo) => this.onDatagram(msg, rinfo))
      this.receivers.set(family, r)
      r.catch(() => this.receivers.delete(family))
    }
    return r
  }

  private onDatagram(msg: Buffer, rinfo: RemoteInfo): void {
    let packet
    try {
      packet = decodeControl(msg)
    } catch (err) {
      this.discarded++
      if (err instanceof BfdPacketError) this.log.debug({ from: rinfo.address }, err.message)
      return
    }
    let session: BfdSession | undefined
    if (packet.yourDiscriminator !== 0) session = this.byDiscr.get(packet.yourDiscriminator)
    else for (const s of this.sessions.values()) if (s.sessionSpec.peerAddress === rinfo.address) session = s
    // §6.8.6: a Your Discriminator we did not hand out, or one of another peer's session, is discarded.
    if (!session || session.sessionSpec.peerAddress !== rinfo.address) {
      this.discarded++
      return
    }
    session.receive(packet)
  }
}

async function bindReceiver(family: 'ipv4' | 'ipv6', port: number, onMessage: (msg: Buffer, rinfo: RemoteInfo) => void): Promise<Socket> {
  const socket = createSocket({ type: family === 'ipv6' ? 'udp6' : 'udp4', ipv6Only: family === 'ipv6' })
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.bind(port, family === 'ipv6' ? '::' : '0.0.0.0', () => {
      socket.off('error', reject)
      resolve()
    })
  })
  try {
    attachSocketFilter(dgramFdOf(socket), ttlFilter(family, 255), `BFD ${family} receive socket: SO_ATTACH_FILTER (TTL 255 only)`)
  } catch (err) {
    socket.close()
    throw err
  }
  socket.on('message', onMessage)
  return socket
}
