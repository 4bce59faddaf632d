// Reading a polled UDP socket's queue in one system call: recvmmsg(2) into preallocated mmsghdr slots,
// each with its payload, its sender's sockaddr and its SO_TIMESTAMPNS control message (when the kernel
// received it). It owns the layout of those C structures (64-bit Linux); it decodes no payload.

import { SOL, bufferAddress, receiveMessages, setIntOption } from './socket-options.js'

/** SO_TIMESTAMPNS, and its control message type SCM_TIMESTAMPNS (asm-generic/socket.h, 64-bit time_t). */
const SO_TIMESTAMPNS = 35
// struct iovec { void *base; size_t len } · struct msghdr { void *name; u32 namelen; struct iovec *iov;
// size_t iovlen; void *control; size_t controllen; int flags } · struct mmsghdr { struct msghdr; u32 len }.
// The size_t lengths read and written here are small: their high halves are zero.
const IOVEC = 16
const MMSGHDR = 64
const MSG_NAME = 0
const MSG_NAMELEN = 8
const MSG_IOV = 16
const MSG_IOVLEN = 24
const MSG_CONTROL = 32
const MSG_CONTROLLEN = 40
const MSG_LEN = 56
/** A sockaddr_in6 is the larger of the two. */
const SOCKADDR = 28
/** cmsghdr { size_t len; int level; int type } and a struct timespec, with room for another message. */
const CONTROL = 64
const CMSG_HEADER = 16

export class DatagramBatch {
  /** One allocation for every slot, so no part of it is small enough for the moving heap. */
  /** The mmsghdr array comes first, at offset 0; then the iovecs, sockaddrs, control and data areas. */
  private readonly mem: Buffer
  private readonly nameAt: number
  private readonly controlAt: number
  private readonly dataAt: number
  private count = 0

  /** Slots for `slots` datagrams of up to `size` bytes; turns on SO_TIMESTAMPNS for `fd`. */
  constructor(readonly fd: number, readonly slots: number, readonly size: number) {
    if (process.arch !== 'x64' && process.arch !== 'arm64') throw new Error(`recvmmsg layout: ${process.arch} is not a 64-bit Linux architecture pinto knows`)
    setIntOption(fd, SOL.socket, SO_TIMESTAMPNS, 1, 'SO_TIMESTAMPNS')
    const iovAt = slots * MMSGHDR
    this.nameAt = iovAt + slots * IOVEC
    this.controlAt = this.nameAt + slots * SOCKADDR
    this.dataAt = this.controlAt + slots * CONTROL
    this.mem = Buffer.alloc(Math.max(this.dataAt + slots * size, 8192))
    const base = bufferAddress(this.mem)
    for (let i = 0; i < slots; i++) {
      const h = i * MMSGHDR
      const iov = iovAt + i * IOVEC
      this.mem.writeBigUInt64LE(base + BigInt(this.dataAt + i * size), iov)
      this.mem.writeBigUInt64LE(BigInt(size), iov + 8)
      this.mem.writeBigUInt64LE(base + BigInt(this.nameAt + i * SOCKADDR), h + MSG_NAME)
      this.mem.writeBigUInt64LE(base + BigInt(iov), h + MSG_IOV)
      this.mem.writeBigUInt64LE(1n, h + MSG_IOVLEN)
      this.mem.writeBigUInt64LE(base + BigInt(this.controlAt + i * CONTROL), h + MSG_CONTROL)
      this.reset(i)
    }
  }

  /** Reads what is queued, up to `slots` datagrams: their count. The slots hold them until the next read. */
  read(): number {
    for (let i = 0; i < this.count; i++) this.reset(i)
    this.count = receiveMessages(this.fd, this.mem, this.slots)
    return this.count
  }

  /** Datagram `i`'s bytes (a view into the slot). */
  payload(i: number): Buffer {
    const at = this.dataAt + i * this.size
    return this.mem.subarray(at, at + Math.min(this.mem.readUInt32LE(i * MMSGHDR + MSG_LEN), this.size))
  }

  /** Datagram `i`'s sender's sockaddr (sockaddr_in or sockaddr_in6). */
  sender(i: number): Buffer {
    const at = this.nameAt + i * SOCKADDR
    return this.mem.subarray(at, at + SOCKADDR)
  }

  /** When the kernel received datagram `i` (ms since the epoch), if it said. */
  arrival(i: number): number | undefined {
    const h = i * MMSGHDR
    const end = this.controlAt + i * CONTROL + Math.min(this.mem.readUInt32LE(h + MSG_CONTROLLEN), CONTROL)
    let at = this.controlAt + i * CONTROL
    while (at + CMSG_HEADER <= end) {
      const length = this.mem.readUInt32LE(at)
      if (length < CMSG_HEADER) return undefined
      if (this.mem.readInt32LE(at + 8) === SOL.socket && this.mem.readInt32LE(at + 12) === SO_TIMESTAMPNS && at + CMSG_HEADER + 16 <= end) {
        const seconds = this.mem.readUInt32LE(at + CMSG_HEADER) + this.mem.readInt32LE(at + CMSG_HEADER + 4) * 0x1_0000_0000
        return seconds * 1000 + this.mem.readUInt32LE(at + CMSG_HEADER + 8) / 1e6
      }
      at += (length + 7) & ~7
    }
    return undefined
  }

  /** The lengths the kernel overwrote, given back for the next read. */
  private reset(i: number): void {
    const h = i * MMSGHDR
    this.mem.writeUInt32LE(SOCKADDR, h + MSG_NAMELEN)
    this.mem.writeUInt32LE(CONTROL, h + MSG_CONTROLLEN)
    this.mem.writeUInt32LE(0, h + MSG_CONTROLLEN + 4)
  }
}
