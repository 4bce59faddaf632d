// One peer's TCP side: the outgoing connect (TCP-MD5 and GTSM through socket-options), admitting accepted
// connections, the second connection of a §6.8 collision until its OPEN is read, received bytes framed and
// decoded into messages, writes, and closing. It reports to its owner; it never steps the FSM or reads the RIB.

import { connect, type Socket } from 'node:net'
import type { Logger } from 'pino'
import {
  BgpError,
  CeaseSubcode,
  ErrorCode,
  Framer,
  codecOptions,
  decodeMessage,
  encodeMessage,
  notification,
  type BgpMessage,
  type CodecOptions,
  type OpenMessage,
} from '../codec/index.js'
import { parseIpv4 } from '../../net/index.js'
import type { Clock } from './clock.js'
import type { FsmStateName } from './fsm.js'
import type { ResolvedPeerConfig } from './peer-config.js'
import { connectSecured, fdOf, setTtlSecurity } from './socket-options.js'

/** What the transport tells its owner, each for the connection that is the session's now. */
export interface TransportEvents {
  /** The connection is up: ours completed (outgoing) or an accepted one was attached. */
  connected(): void
  /** The connection could not be opened or was lost. */
  failed(reason: string): void
  /** A whole message arrived, decoded with the options rx() gave. */
  message(msg: BgpMessage): void
  /** What arrived is not a valid message (its header, an OPEN, another message): nothing after it is read. */
  malformed(error: BgpError, what: 'header' | 'open' | 'message'): void
  /** Every message of one read has been handled (the owner flushes the RIB once per read). */
  read(): void
  /** The socket has room again after a write that did not fit. */
  drained(): void
  /** The second connection sent its OPEN: the owner decides (collisionVerdict) to take it over or refuse it. */
  collision(open: OpenMessage): void
  /** A failure the peer's status should show (a refused or impossible connection). */
  problem(text: string): void
}

/** How long a closed connection may take to flush a last NOTIFICATION before it is destroyed. */
const LINGER_MS = 1000

export class PeerTransport {
  private socket: Socket | undefined
  private isOutgoing = false
  private pendingConnect: Socket | undefined
  private failedConnect: NodeJS.Immediate | undefined
  /** An accepted connection that arrived while a session was past Active: it waits here for its OPEN. */
  private incoming: Socket | undefined
  private framer = new Framer()
  /** Why the speaker's listener could not be keyed for this peer's password; undefined when it was. */
  private listenerProblem: string | undefined

  constructor(
    private readonly config: () => ResolvedPeerConfig,
    /** How received messages decode: the session's negotiated options, or the defaults before the OPENs. */
    private readonly rx: () => CodecOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly events: TransportEvents,
  ) {}

  get open(): boolean {
    return this.socket !== undefined
  }

  /** Whether the session's connection is the one we opened (§6.8 compares who opened which). */
  get outgoing(): boolean {
    return this.isOutgoing
  }

  get localAddress(): string | undefined {
    return this.socket?.localAddress?.replace(/^::ffff:/, '')
  }

  /** Bytes queued in the socket, not yet taken by the kernel; undefined without a connection. */
  get queued(): number | undefined {
    const s = this.socket
    return s === undefined || s.destroyed ? undefined : s.writableLength
  }

  /** Switches the framer to RFC 8654 extended messages once both sides advertised them. */
  setExtendedMessage(on: boolean): void {
    this.framer.setExtendedMessage(on)
  }

  setListenerProblem(problem: string | undefined): void {
    this.listenerProblem = problem
    if (problem !== undefined) this.events.problem(`the listener cannot take this peer's connections: ${problem}`)
  }

  /** Opens our connection; its outcome arrives as connected() or failed(). */
  connect(): void {
    const c = this.config()
    this.abandonOutgoing()
    let socket: Socket
    try {
      if (c.transportError !== undefined) throw new Error(c.transportError)
      socket =
        c.password !== undefined || c.ttlSecurity > 0
          ? connectSecured({
              host: c.address,
              port: c.port,
              ...(c.localAddress ? { localAddress: c.localAddress } : {}),
              ...(c.password !== undefined ? { md5Key: Buffer.from(c.password) } : {}),
              ...(c.ttlSecurity > 0 ? { ttlSecurity: c.ttlSecurity } : {}),
            })
          : connect({ host: c.address, port: c.port, ...(c.localAddress ? { localAddress: c.localAddress } : {}) })
    } catch (err) {
      // Never an unkeyed connection in place of a keyed one: the attempt fails, and says why.
      const reason = `cannot open the connection: ${(err as Error).message}`
      this.events.problem(reason)
      this.log.error(reason)
      // Reported on the next turn, never from inside the FSM action that asked for the connect.
      this.failedConnect = setImmediate(() => {
        this.failedConnect = undefined
        this.events.failed(reason)
      })
      return
    }
    this.pendingConnect = socket
    socket.once('connect', () => {
      if (this.pendingConnect !== socket) return
      this.pendingConnect = undefined
      this.attach(socket, true)
      this.events.connected()
    })
    socket.once('error', (err) => {
      if (this.pendingConnect !== socket) return
      this.pendingConnect = undefined
      socket.destroy()
      this.events.failed(err.message)
    })
  }

  /**
   * Whether an accepted connection may be this peer's: its transport could be set up (the listener keyed
   * for the password, GTSM on the socket). A refused one is destroyed and reported as a problem.
   */
  admit(socket: Socket): boolean {
    const c = this.config()
    const problem = c.transportError ?? this.listenerProblem
    try {
      if (problem !== undefined) throw new Error(problem)
      if (c.ttlSecurity > 0) setTtlSecurity(fdOf(socket), c.address, c.ttlSecurity)
      return true
    } catch (err) {
      const text = `refused a connection from the peer: ${(err as Error).message}`
      this.events.problem(text)
      this.log.error(text)
      socket.destroy()
      return false
    }
  }

  /** An admitted connection while none is the session's (Connect, Active): it becomes the session's. */
  accept(socket: Socket): void {
    this.abandonOutgoing()
    this.attach(socket, false)
    this.events.connected()
  }

  /** An admitted connection while the session has one: held until its OPEN says who it is (§6.8). */
  hold(socket: Socket): void {
    this.incoming?.destroy()
    this.incoming = socket
    const framer = new Framer()
    const onData = (chunk: Buffer): void => {
      let first: Uint8Array | undefined
      let open: BgpMessage | undefined
      try {
        first = framer.push(chunk)[0]
        if (first === undefined) return
        open = decodeMessage(first, codecOptions())
      } catch {
        // Whatever this connection sent is not a BGP session's start: it goes, the session stays.
      }
      socket.off('data', onData)
      if (open?.type !== 'open' || this.incoming !== socket) {
        socket.destroy()
        return
      }
      this.events.collision(open)
    }
    socket.on('data', onData)
    socket.on('error', () => socket.destroy())
    socket.on('close', () => {
      if (this.incoming === socket) this.incoming = undefined
    })
  }

  /** The held connection lost the collision: it is told so (Cease / Connection Collision Resolution) and closed. */
  refuseIncoming(why: string): void {
    const s = this.incoming
    this.incoming = undefined
    if (s === undefined) return
    this.log.info(why)
    s.end(encodeMessage(notification(ErrorCode.CEASE, CeaseSubcode.CONNECTION_COLLISION_RESOLUTION), codecOptions()))
  }

  /** The held connection won: it is the session's now (the FSM's `adopt`). */
  adoptIncoming(): void {
    const s = this.incoming
    this.incoming = undefined
    if (s === undefined) return
    this.abandonOutgoing()
    s.removeAllListeners('data')
    s.removeAllListeners('close')
    s.removeAllListeners('error')
    this.attach(s, false)
  }

  /** Closes the session's connection. `connectTimedOut`: the retry timer fired on a connect still waiting. */
  drop(connectTimedOut: boolean): void {
    const c = this.config()
    if (this.pendingConnect && connectTimedOut) {
      // A TCP-MD5 mismatch looks like this: the kernel drops segments whose digest is wrong or missing,
      // so nothing ever answers.
      this.events.problem(`connect to ${c.address} port ${c.port} timed out${c.password !== undefined ? '; TCP-MD5 keyed (a key the peer does not share gets no answer)' : ''}`)
    }
    const s = this.socket
    this.socket = undefined
    this.abandonOutgoing()
    if (s) {
      // end() lets a NOTIFICATION queued just before reach the peer.
      s.end()
      this.clock.setTimeout(() => s.destroy(), LINGER_MS)
    }
  }

  /** Closes everything, the held connection too (the session is stopped). */
  closeAll(): void {
    this.incoming?.destroy()
    this.incoming = undefined
    this.drop(false)
  }

  /** Queues bytes: 'full' when the socket's buffer is over its mark (the owner starts the send hold timer). */
  write(bytes: Uint8Array): 'queued' | 'full' | 'closed' {
    const s = this.socket
    if (!s || s.destroyed) return 'closed'
    return s.write(bytes) ? 'queued' : 'full'
  }

  private abandonOutgoing(): void {
    if (this.failedConnect) clearImmediate(this.failedConnect)
    this.failedConnect = undefined
    this.pendingConnect?.destroy()
    this.pendingConnect = undefined
  }

  /** Frames one read into messages, each decoded and handed on while this socket is still the session's. */
  private read(socket: Socket, chunk: Buffer): void {
    const framer = this.framer
    framer.feed(chunk)
    while (this.socket === socket) {
      let frame: Uint8Array | undefined
      try {
        frame = framer.next()
      } catch (err) {
        if (!(err instanceof BgpError)) throw err
        this.events.malformed(err, 'header')
        break
      }
      if (frame === undefined) break
      let msg: BgpMessage
      try {
        msg = decodeMessage(frame, this.rx(), true)
      } catch (err) {
        if (!(err instanceof BgpError)) throw err
        this.events.malformed(err, frame[18] === 1 ? 'open' : 'message')
        break
      }
      this.events.message(msg)
    }
    this.events.read()
  }

  private attach(socket: Socket, outgoing: boolean): void {
    this.socket?.destroy()
    this.socket = socket
    this.isOutgoing = outgoing
    this.framer = new Framer()
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => {
      if (this.socket === socket) this.read(socket, chunk)
    })
    socket.on('drain', () => {
      if (this.socket === socket) this.events.drained()
    })
    const closed = (reason: string): void => {
      if (this.socket !== socket) return
      this.socket = undefined
      this.events.failed(reason)
    }
    socket.on('error', (err) => closed(err.message))
    socket.on('close', () => closed('connection closed by the peer'))
  }
}

export type CollisionVerdict = { readonly take: true; readonly reason: string } | { readonly take: false; readonly reason: string }

/**
 * §6.8 for a second connection whose OPEN came in while the session is in `state`: in OpenSent or
 * OpenConfirm the connection opened by the speaker with the higher BGP identifier survives; while
 * Established the new one is refused, unless the peer does graceful restart (RFC 4724 §4.2: it restarted
 * before we noticed its old connection die). In Connect, Active or Idle there is nothing to collide with.
 */
export function collisionVerdict(
  state: FsmStateName,
  peerGracefulRestart: boolean,
  ourRouterId: string,
  open: OpenMessage,
  ourConnectionOutgoing: boolean,
): CollisionVerdict {
  if (state === 'Established') {
    if (peerGracefulRestart) return { take: true, reason: 'the peer reconnected while Established (graceful restart): the old session is treated as failed' }
    return { take: false, reason: 'connection collision with an Established session: refusing the new connection' }
  }
  if (state === 'OpenSent' || state === 'OpenConfirm') {
    const ours = parseIpv4(ourRouterId) ?? 0
    const theirs = parseIpv4(open.bgpId) ?? 0
    const keepExisting = ours > theirs ? ourConnectionOutgoing : !ourConnectionOutgoing
    if (keepExisting) return { take: false, reason: `connection collision: keeping the ${ourConnectionOutgoing ? 'outgoing' : 'incoming'} connection` }
    return { take: true, reason: 'connection collision: the incoming connection wins (§6.8)' }
  }
  return { take: true, reason: 'taking over the incoming connection' }
}
