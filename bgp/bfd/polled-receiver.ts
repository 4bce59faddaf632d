// The port-3784 receive socket of one address family, read by polling: it sits outside the event loop,
// so a datagram arriving wakes nothing; the service drains it on its tick and learns from the kernel
// when each datagram arrived. GTSM (RFC 5881 §5) is a kernel socket filter passing TTL/hop limit 255 only.
// It decodes nothing and knows no session.

import { ipv4Bytes, parseIpv6 } from '../codec/ip.js'
import { attachSocketFilter, closeFd, lastReceiveTime, openPolledUdp, receiveDatagram, ttlFilter } from '../session/socket-options.js'

/** Datagrams read per drain at most, so a flood cannot hold the event loop. */
const DRAIN_LIMIT = 512

/** The address of a peer as the receiver reports senders: its bytes in hex. */
export function peerKey(address: string): string {
  const bytes = ipv4Bytes(address) ?? parseIpv6(address)
  if (!bytes) throw new RangeError(`${address} is not an IPv4 or IPv6 address`)
  return Buffer.from(bytes).toString('hex')
}

/** `receiver.sender()` gives the sender's address as text, for logs, until the next datagram is read. */
export type DatagramHandler = (payload: Buffer, fromKey: string, receiver: PolledReceiver, arrivedAt: number) => void

export class PolledReceiver {
  private fd: number | undefined
  private readonly buf = Buffer.alloc(2048)
  private readonly from = Buffer.alloc(28)
  private readonly fromLength = Buffer.alloc(4)
  private readonly stamp = Buffer.alloc(16)

  constructor(readonly family: 'ipv4' | 'ipv6', port: number) {
    const what = `BFD ${family} receive socket`
    const fd = openPolledUdp(family === 'ipv4' ? 4 : 6, family === 'ipv4' ? '0.0.0.0' : '::', port, what)
    try {
      attachSocketFilter(fd, ttlFilter(family, 255), `${what}: SO_ATTACH_FILTER (TTL 255 only)`)
    } catch (err) {
      closeFd(fd)
      throw err
    }
    this.fd = fd
  }

  /** Reads what is queued; `now` stands in for an arrival time the kernel does not give. Returns the count. */
  drain(now: number, onDatagram: DatagramHandler): number {
    const fd = this.fd
    if (fd === undefined) return 0
    let n = 0
    for (; n < DRAIN_LIMIT; n++) {
      const length = receiveDatagram(fd, this.buf, this.from, this.fromLength)
      if (length < 0) break
      const stamp = lastReceiveTime(fd, this.stamp)
      // Kernel time and the clock agree to well under a millisecond; a stamp from the future or long
      // ago (no stamp yet, a clock step) is not trusted.
      const at = stamp !== undefined && stamp <= now && stamp > now - 1000 ? stamp : now
      const key = this.family === 'ipv4' ? this.from.toString('hex', 4, 8) : this.from.toString('hex', 8, 24)
      onDatagram(this.buf.subarray(0, length), key, this, at)
    }
    return n
  }

  close(): void {
    if (this.fd !== undefined) closeFd(this.fd)
    this.fd = undefined
  }

  sender(): string {
    if (this.family === 'ipv4') return [...this.from.subarray(4, 8)].join('.')
    const groups: string[] = []
    for (let i = 8; i < 24; i += 2) groups.push(this.from.readUInt16BE(i).toString(16))
    return groups.join(':')
  }
}
