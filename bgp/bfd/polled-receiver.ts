// The port-3784 receive socket of one address family, read by polling: it sits outside the event loop,
// so a datagram arriving wakes nothing; the service drains it on its tick and learns from the kernel
// when each datagram arrived. GTSM (RFC 5881 §5) is a kernel socket filter passing TTL/hop limit 255 only.
// It decodes nothing and knows no session.

import { ipv4Bytes, parseIpv6 } from '../../net/index.js'
import { DatagramBatch } from '../session/datagram-batch.js'
import { attachSocketFilter, closeFd, openPolledUdp, ttlFilter } from '../session/socket-options.js'

/** Datagrams read per drain at most, so a flood cannot hold the event loop: BATCH per system call. */
const DRAIN_LIMIT = 512
const BATCH = 32
/** A BFD Control packet is 24 bytes, 26 + auth at most; anything longer is cut and then refused. */
const DATAGRAM_MAX = 512

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
  private readonly batch: DatagramBatch
  private from: Buffer = Buffer.alloc(28)

  constructor(readonly family: 'ipv4' | 'ipv6', port: number) {
    const what = `BFD ${family} receive socket`
    const fd = openPolledUdp(family === 'ipv4' ? 4 : 6, family === 'ipv4' ? '0.0.0.0' : '::', port, what)
    try {
      attachSocketFilter(fd, ttlFilter(family, 255), `${what}: SO_ATTACH_FILTER (TTL 255 only)`)
      this.batch = new DatagramBatch(fd, BATCH, DATAGRAM_MAX)
    } catch (err) {
      closeFd(fd)
      throw err
    }
    this.fd = fd
  }

  /** Reads what is queued; `now` stands in for an arrival time the kernel does not give. Returns the count. */
  drain(now: number, onDatagram: DatagramHandler): number {
    let n = 0
    while (this.fd !== undefined && n < DRAIN_LIMIT) {
      const got = this.batch.read()
      for (let i = 0; i < got; i++) {
        const stamp = this.batch.arrival(i)
        // Kernel time and the clock agree to well under a millisecond; a stamp from the future or long
        // ago (a clock step) is not trusted.
        const at = stamp !== undefined && stamp <= now && stamp > now - 1000 ? stamp : now
        this.from = this.batch.sender(i)
        const key = this.family === 'ipv4' ? this.from.toString('hex', 4, 8) : this.from.toString('hex', 8, 24)
        onDatagram(this.batch.payload(i), key, this, at)
      }
      n += got
      if (got < BATCH) break
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
