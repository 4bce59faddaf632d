// The session end of the bench's senders (bgp-sender, table-sender): connects to the receiver, exchanges
// OPENs for one family, and calls back once Established with the socket to write UPDATEs on. Reports on
// stdout as JSON lines (established, notification, error) and exits with the session. Sends no routes.

import { connect, type Socket } from 'node:net'
import { Framer, KEEPALIVE, Safi, codecOptions, decodeMessage, encodeMessage, makeOpen, type CodecOptions } from '../bgp/codec/index.js'

export interface SenderSession {
  readonly peer: string
  readonly local: string
  readonly routerId: string
  readonly asn: number
  readonly afi: number
  readonly port?: number
}

export const say = (o: Record<string, unknown>): void => void process.stdout.write(JSON.stringify(o) + '\n')

/** Opens the session; `established(socket)` runs once, after the peer's first KEEPALIVE. */
export function openSenderSession(s: SenderSession, opts: CodecOptions, clock: () => number, established: (socket: Socket) => void): void {
  const open = makeOpen({
    asn: s.asn,
    holdTime: 240,
    bgpId: s.routerId,
    capabilities: [{ kind: 'multiprotocol', afi: s.afi, safi: Safi.UNICAST }, { kind: 'four-octet-as', asn: s.asn }, { kind: 'route-refresh' }],
  })
  const socket = connect({ host: s.peer, port: s.port ?? 179, localAddress: s.local })
  socket.setNoDelay(true)
  const framer = new Framer()
  let up = false
  socket.on('connect', () => socket.write(encodeMessage(open, codecOptions())))
  socket.on('data', (chunk: Buffer) => {
    for (const frame of framer.push(chunk)) {
      const msg = decodeMessage(frame, opts)
      if (msg.type === 'notification') {
        say({ event: 'notification', code: msg.code, subcode: msg.subcode })
        process.exit(1)
      }
      if (msg.type === 'open') socket.write(encodeMessage(KEEPALIVE, opts))
      if (msg.type === 'keepalive' && !up) {
        up = true
        say({ event: 'established', at: clock() })
        established(socket)
      }
    }
  })
  socket.on('error', (e) => {
    say({ event: 'error', message: e.message })
    process.exit(1)
  })
  socket.on('close', () => process.exit(0))
  setInterval(() => socket.write(encodeMessage(KEEPALIVE, opts)), 30_000).unref()
  process.on('SIGTERM', () => process.exit(0))
}

/** Writes every buffer, waiting for the socket to drain when it asks to. */
export async function writeAll(socket: Socket, buffers: readonly Buffer[]): Promise<void> {
  for (const b of buffers) {
    if (!socket.write(b)) await new Promise((r) => socket.once('drain', r))
  }
}
