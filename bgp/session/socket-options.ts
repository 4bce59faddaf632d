// Socket options Node's net and dgram do not expose (TCP_MD5SIG, IP_MINTTL, IPV6_MINHOPCOUNT, IP_TTL on a
// TCP socket, SO_ATTACH_FILTER), set with setsockopt(2) through koffi on a socket's file descriptor. It
// owns the FFI and the numbers; it decides nothing: a caller that needs an option and cannot have it fails.

import { createRequire } from 'node:module'
import { Socket } from 'node:net'
import { ipv4Bytes, parseIpv6, type Family } from '../../net/index.js'

/** Linux's option levels and names (include/uapi/linux/{in,in6,tcp,socket}.h, asm-generic/socket.h). */
export const SOL = { socket: 1, ip: 0, ipv6: 41, tcp: 6 } as const
export const OPT = {
  soAttachFilter: 26,
  ipTtl: 2,
  ipMinTtl: 21,
  ipv6UnicastHops: 16,
  ipv6MinHopCount: 73,
  tcpMd5Sig: 14,
} as const

/** Why the options cannot be set on this host (koffi or libc would not load). */
export class SocketOptionsUnavailable extends Error {}

/** setsockopt(2) failed: `option` names what was being set, `errno` the kernel's answer. */
export class SocketOptionError extends Error {
  constructor(readonly option: string, readonly errno: number, message: string) {
    super(`${option}: ${message}`)
  }
}

/** One classic BPF instruction (struct sock_filter, linux/filter.h). */
export interface SockFilterInstruction {
  readonly code: number
  readonly jt: number
  readonly jf: number
  readonly k: number
}

interface Libc {
  setsockopt(fd: number, level: number, name: number, value: Buffer, length: number): number
  socket(domain: number, type: number, protocol: number): number
  bind(fd: number, address: Buffer, length: number): number
  close(fd: number): number
  attachFilter(fd: number, program: readonly SockFilterInstruction[]): number
  recvmmsg(fd: number, vec: Buffer, vlen: number, flags: number): number
  address(buf: Buffer): bigint
  connect(fd: number, address: Buffer, length: number): number
  send(fd: number, buf: Buffer, length: number, flags: number): number
  /** send(2) on a thread of libuv's pool: the result, -1 on failure (errno is that thread's). */
  sendAsync(fd: number, buf: Buffer, length: number, flags: number): Promise<number>
  recv(fd: number, buf: Buffer, length: number, flags: number): number
  setns(fd: number, nstype: number): number
  strerror(errno: number): string
  errno(): number
}

let libc: Libc | Error | undefined

function load(): Libc {
  if (libc === undefined) {
    try {
      // createRequire: koffi is CommonJS with a native part, loaded only by an agent that sets an option.
      const koffi = createRequire(import.meta.url)('koffi') as {
        load(name: string): { func(sig: string, ret?: unknown, args?: unknown[]): (...a: unknown[]) => unknown }
        errno(): number
        struct(name: string, fields: Record<string, unknown>): unknown
        pointer(type: unknown): unknown
        sizeof(type: unknown): number
        address(value: unknown): bigint
      }
      const lib = koffi.load('libc.so.6')
      const set = lib.func('int setsockopt(int fd, int level, int name, const void *value, uint32_t length)')
      const strerror = lib.func('const char *strerror(int errnum)')
      // struct sock_fprog { u16 len; struct sock_filter *filter; }: koffi lays out the padding and
      // passes the instruction array behind the pointer for the length of the call.
      const sockFilter = koffi.struct('sock_filter', { code: 'uint16', jt: 'uint8', jf: 'uint8', k: 'uint32' })
      const sockFprog = koffi.struct('sock_fprog', { len: 'uint16', filter: koffi.pointer(sockFilter) })
      const fprogSize = koffi.sizeof(sockFprog)
      const setFprog = lib.func('setsockopt', 'int', ['int', 'int', 'int', koffi.pointer(sockFprog), 'uint32_t'])
      const socket = lib.func('int socket(int domain, int type, int protocol)')
      const bind = lib.func('int bind(int fd, const void *address, uint32_t length)')
      const close = lib.func('int close(int fd)')
      // The timeout argument is NULL (a number 0 passes as a null pointer): the socket is non-blocking.
      const recvmmsg = lib.func('int recvmmsg(int fd, void *vec, unsigned int vlen, int flags, intptr_t timeout)')
      const connect = lib.func('int connect(int fd, const void *address, uint32_t length)')
      const send = lib.func('intptr_t send(int fd, const void *buf, size_t length, int flags)') as ((...a: unknown[]) => unknown) & { async(...a: unknown[]): void }
      const recv = lib.func('intptr_t recv(int fd, void *buf, size_t length, int flags)')
      const setns = lib.func('int setns(int fd, int nstype)')
      libc = {
        setsockopt: (fd, level, name, value, length) => set(fd, level, name, value, length) as number,
        socket: (domain, type, protocol) => socket(domain, type, protocol) as number,
        bind: (fd, address, length) => bind(fd, address, length) as number,
        close: (fd) => close(fd) as number,
        recvmmsg: (fd, vec, vlen, flags) => recvmmsg(fd, vec, vlen, flags, 0) as number,
        address: (buf) => koffi.address(buf),
        connect: (fd, address, length) => connect(fd, address, length) as number,
        send: (fd, buf, length, flags) => send(fd, buf, length, flags) as number,
        sendAsync: (fd, buf, length, flags) =>
          new Promise((resolve, reject) => send.async(fd, buf, length, flags, (err: unknown, n: unknown) => (err !== null && err !== undefined ? reject(err instanceof Error ? err : new Error(`send on a pool thread failed: ${JSON.stringify(err)}`)) : resolve(Number(n))))),
        recv: (fd, buf, length, flags) => Number(recv(fd, buf, length, flags)),
        setns: (fd, nstype) => setns(fd, nstype) as number,
        attachFilter: (fd, program) => setFprog(fd, SOL.socket, OPT.soAttachFilter, { len: program.length, filter: program }, fprogSize) as number,
        strerror: (e) => strerror(e) as string,
        errno: () => koffi.errno(),
      }
    } catch (err) {
      libc = err as Error
    }
  }
  if (libc instanceof Error) throw new SocketOptionsUnavailable(`socket options cannot be set here: the FFI (koffi) did not load: ${libc.message}`)
  return libc
}

/** Whether setsockopt is reachable on this host; the reason when not. */
export function socketOptionsAvailable(): { ok: true } | { ok: false; reason: string } {
  try {
    load()
    return { ok: true }
  } catch (err) {
    return { ok: false, reason: (err as Error).message }
  }
}

/** setsockopt(fd, level, name, value); throws SocketOptionError naming `option` on failure. */
export function setSocketOption(fd: number, level: number, name: number, value: Buffer, option: string): void {
  const c = load()
  if (c.setsockopt(fd, level, name, value, value.length) === 0) return
  const e = c.errno()
  throw new SocketOptionError(option, e, c.strerror(e))
}

/** An int-valued option (IP_TTL, IP_MINTTL, ...). */
export function setIntOption(fd: number, level: number, name: number, value: number, option: string): void {
  setSocketOption(fd, level, name, Buffer.from(new Int32Array([value]).buffer), option)
}

/**
 * The file descriptor under a net.Socket, net.Server or the handle of either, once the kernel socket
 * exists (after listen, or a socket made from an fd). Node keeps it on the libuv handle as `fd`.
 */
export function fdOf(owner: object): number {
  const handle = (owner as { _handle?: { fd?: unknown } })._handle
  const fd = handle?.fd
  if (typeof fd !== 'number' || fd < 0) throw new SocketOptionsUnavailable('the socket has no file descriptor yet (not listening or not connected)')
  return fd
}

// ---- TCP-MD5 (RFC 2385) and GTSM (RFC 5082) -------------------------------------------------------

/** TCP_MD5SIG_MAXKEYLEN (include/uapi/linux/tcp.h). */
export const TCP_MD5_MAX_KEY = 80
const AF_INET = 2
const AF_INET6 = 10
/** struct tcp_md5sig: sockaddr_storage (128), flags, prefixlen, keylen (u16), pad (u32), key[80]. */
const MD5SIG_SIZE = 216

/** An address as its family and bytes; a clear error when it is neither IPv4 nor IPv6 text. */
function addressBytes(address: string): { family: Family; bytes: Uint8Array } {
  const v4 = ipv4Bytes(address)
  if (v4) return { family: 4, bytes: v4 }
  const v6 = parseIpv6(address)
  if (v6) return { family: 6, bytes: v6 }
  throw new RangeError(`${address} is not an IPv4 or IPv6 address`)
}

/**
 * A sockaddr_in or sockaddr_in6 (family in host order, port in network order) for a socket of
 * `socketFamily`: an IPv4 address on an IPv6 socket is written v4-mapped (::ffff:a.b.c.d), as the
 * kernel sees such a peer.
 */
export function encodeSockaddr(address: string, port: number, socketFamily: Family): Buffer {
  const a = addressBytes(address)
  if (socketFamily === 4) {
    if (a.family !== 4) throw new RangeError(`${address}: an IPv6 address on an IPv4 socket`)
    const out = Buffer.alloc(16)
    out.writeUInt16LE(AF_INET, 0)
    out.writeUInt16BE(port, 2)
    out.set(a.bytes, 4)
    return out
  }
  const out = Buffer.alloc(28)
  out.writeUInt16LE(AF_INET6, 0)
  out.writeUInt16BE(port, 2)
  if (a.family === 4) {
    out[18] = 0xff
    out[19] = 0xff
    out.set(a.bytes, 20)
  } else out.set(a.bytes, 8)
  return out
}

/** struct tcp_md5sig keying `peer` on a socket of `socketFamily`; an empty key deletes the peer's key. */
export function encodeTcpMd5Sig(peer: string, key: Uint8Array, socketFamily: Family): Buffer {
  if (key.length > TCP_MD5_MAX_KEY) throw new RangeError(`a TCP-MD5 key is at most ${TCP_MD5_MAX_KEY} bytes, this one has ${key.length}`)
  const out = Buffer.alloc(MD5SIG_SIZE)
  encodeSockaddr(peer, 0, socketFamily).copy(out, 0)
  // tcpm_flags and tcpm_prefixlen stay 0: one key for exactly this address.
  out.writeUInt16LE(key.length, 130)
  out.set(key, 136)
  return out
}

/** Keys (or with no key, unkeys) segments to and from `peer` on `fd`, a socket of `socketFamily`. */
export function setTcpMd5Key(fd: number, socketFamily: Family, peer: string, key: Uint8Array | undefined): void {
  setSocketOption(fd, SOL.tcp, OPT.tcpMd5Sig, encodeTcpMd5Sig(peer, key ?? new Uint8Array(0), socketFamily), `TCP_MD5SIG for ${peer}`)
}

/**
 * GTSM toward `peer`, at most `hops` away: TTL (hop limit) 255 on what we send and a minimum of
 * 256 - hops on what we accept. The IPv4 options apply to an IPv4 peer on an IPv6 socket too.
 */
export function setTtlSecurity(fd: number, peer: string, hops: number): void {
  if (!Number.isInteger(hops) || hops < 1 || hops > 255) throw new RangeError(`GTSM hops must be 1..255, not ${hops}`)
  if (addressBytes(peer).family === 4) {
    setIntOption(fd, SOL.ip, OPT.ipTtl, 255, 'IP_TTL')
    setIntOption(fd, SOL.ip, OPT.ipMinTtl, 256 - hops, 'IP_MINTTL')
  } else {
    setIntOption(fd, SOL.ipv6, OPT.ipv6UnicastHops, 255, 'IPV6_UNICAST_HOPS')
    setIntOption(fd, SOL.ipv6, OPT.ipv6MinHopCount, 256 - hops, 'IPV6_MINHOPCOUNT')
  }
}

/**
 * TTL (and hop limit) 255 on a listener: its SYN-ACKs carry the listener's TTL, and a GTSM peer that
 * connects to us drops a SYN-ACK with less. IPv4 as well on an IPv6 socket, for v4-mapped peers.
 */
export function setListenerTtl(fd: number, socketFamily: Family): void {
  setIntOption(fd, SOL.ip, OPT.ipTtl, 255, 'IP_TTL')
  if (socketFamily === 6) setIntOption(fd, SOL.ipv6, OPT.ipv6UnicastHops, 255, 'IPV6_UNICAST_HOPS')
}

export interface SecuredConnect {
  readonly host: string
  readonly port: number
  readonly localAddress?: string
  /** TCP-MD5 key for the connection (RFC 2385). */
  readonly md5Key?: Uint8Array
  /** GTSM hops (RFC 5082). */
  readonly ttlSecurity?: number
}

/**
 * A TCP connect with TCP-MD5 and GTSM in force from the SYN on: the socket is made with socket(2),
 * keyed, bound to the local address, and only then handed to net.Socket, which connects on it.
 */
export function connectSecured(o: SecuredConnect): Socket {
  const c = load()
  const family = addressBytes(o.host).family
  // SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC: libuv expects a non-blocking descriptor.
  const fd = c.socket(family === 4 ? AF_INET : AF_INET6, 1 | 0o4000 | 0o2000000, 0)
  if (fd < 0) {
    const e = c.errno()
    throw new SocketOptionError('socket', e, c.strerror(e))
  }
  try {
    if (o.md5Key !== undefined) setTcpMd5Key(fd, family, o.host, o.md5Key)
    if (o.ttlSecurity !== undefined) setTtlSecurity(fd, o.host, o.ttlSecurity)
    if (o.localAddress !== undefined) {
      const sa = encodeSockaddr(o.localAddress, 0, family)
      if (c.bind(fd, sa, sa.length) !== 0) {
        const e = c.errno()
        throw new SocketOptionError(`bind ${o.localAddress}`, e, c.strerror(e))
      }
    }
  } catch (err) {
    c.close(fd)
    throw err
  }
  const socket = new Socket({ fd, readable: true, writable: true })
  return socket.connect({ host: o.host, port: o.port })
}

/** SO_ATTACH_FILTER: the kernel runs `program` on every datagram and drops those it returns 0 for. */
export function attachSocketFilter(fd: number, program: readonly SockFilterInstruction[], option: string): void {
  const c = load()
  if (c.attachFilter(fd, program) === 0) return
  const e = c.errno()
  throw new SocketOptionError(option, e, c.strerror(e))
}

/** SKF_NET_OFF: BPF absolute loads from here read the network header, not the UDP payload. */
const SKF_NET_OFF = -0x100000
const BPF_LD_B_ABS = 0x30
const BPF_JEQ_K = 0x15
const BPF_RET_K = 0x06

/**
 * A filter passing only datagrams whose IPv4 TTL (header byte 8) or IPv6 Hop Limit (byte 7) is `ttl`:
 * GTSM on receive for a UDP socket of that family (RFC 5082, RFC 5881 §5).
 */
export function ttlFilter(family: 'ipv4' | 'ipv6', ttl: number): SockFilterInstruction[] {
  return [
    { code: BPF_LD_B_ABS, jt: 0, jf: 0, k: (SKF_NET_OFF + (family === 'ipv4' ? 8 : 7)) >>> 0 },
    { code: BPF_JEQ_K, jt: 0, jf: 1, k: ttl },
    { code: BPF_RET_K, jt: 0, jf: 0, k: 0xffffffff },
    { code: BPF_RET_K, jt: 0, jf: 0, k: 0 },
  ]
}

/**
 * The file descriptor of a bound dgram.Socket. Node keeps its UDP handle under a symbol-keyed state
 * object (`Symbol('state symbol')`, lib/internal/dgram.js), not on `_handle` as net does; found by the
 * symbol's description, checked on Node 20 and 26.
 */
export function dgramFdOf(socket: object): number {
  const sym = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'state symbol')
  const state = sym === undefined ? undefined : (socket as Record<symbol, { handle?: { fd?: unknown } } | undefined>)[sym]
  if (state === undefined) throw new SocketOptionsUnavailable(`this Node.js (${process.version}) keeps no dgram socket state where pinto looks for it: the socket's file descriptor cannot be found`)
  const fd = state.handle?.fd
  if (typeof fd !== 'number' || fd < 0) throw new SocketOptionsUnavailable('the dgram socket has no file descriptor yet (not bound) or is closed')
  return fd
}

// ---- UDP sockets read by polling ------------------------------------------------------------------

const SOCK_DGRAM_NONBLOCK_CLOEXEC = 2 | 0o4000 | 0o2000000
const IPV6_V6ONLY = 26
const EAGAIN = 11
const EINTR = 4
const MSG_DONTWAIT = 0x40
/** EADDRINUSE: bind(2) found the address and port taken. */
export const EADDRINUSE = 98

/**
 * A non-blocking UDP socket bound to `address`:`port`, outside libuv: nothing wakes the event loop
 * when a datagram arrives, the owner reads the queue with receiveMessages when it chooses. An IPv6
 * socket is IPv6-only.
 */
export function openPolledUdp(family: Family, address: string, port: number, what: string): number {
  const c = load()
  const fd = c.socket(family === 4 ? AF_INET : AF_INET6, SOCK_DGRAM_NONBLOCK_CLOEXEC, 0)
  if (fd < 0) {
    const e = c.errno()
    throw new SocketOptionError(`${what}: socket`, e, c.strerror(e))
  }
  try {
    if (family === 6) setIntOption(fd, SOL.ipv6, IPV6_V6ONLY, 1, `${what}: IPV6_V6ONLY`)
    const sa = encodeSockaddr(address, port, family)
    if (c.bind(fd, sa, sa.length) !== 0) {
      const e = c.errno()
      throw new SocketOptionError(`${what}: bind ${family === 6 ? `[${address}]` : address}:${port}`, e, c.strerror(e))
    }
  } catch (err) {
    c.close(fd)
    throw err
  }
  return fd
}

/**
 * recvmmsg(2) with MSG_DONTWAIT on `fd` into the mmsghdr array `vec` (laid out by datagram-batch.ts):
 * how many datagrams were read, 0 when the queue is empty. Other failures throw.
 */
export function receiveMessages(fd: number, vec: Buffer, vlen: number): number {
  const c = load()
  for (;;) {
    const n = c.recvmmsg(fd, vec, vlen, MSG_DONTWAIT)
    if (n >= 0) return n
    const e = c.errno()
    if (e === EAGAIN) return 0
    if (e !== EINTR) throw new SocketOptionError('recvmmsg', e, c.strerror(e))
  }
}

/**
 * Where `buf`'s bytes are in memory, for pointers written into structures the kernel reads. The caller
 * keeps `buf` alive as long as the pointers are used; a Buffer's bytes live outside the moving heap.
 */
export function bufferAddress(buf: Buffer): bigint {
  return load().address(buf)
}

/** TTL (hop limit) 255 on what `fd` sends and `fd` connected to `address`:`port`. */
export function connectUdp(fd: number, family: Family, address: string, port: number, what: string): void {
  if (family === 4) setIntOption(fd, SOL.ip, OPT.ipTtl, 255, `${what}: IP_TTL`)
  else setIntOption(fd, SOL.ipv6, OPT.ipv6UnicastHops, 255, `${what}: IPV6_UNICAST_HOPS`)
  const c = load()
  const sa = encodeSockaddr(address, port, family)
  if (c.connect(fd, sa, sa.length) === 0) return
  const e = c.errno()
  throw new SocketOptionError(`${what}: connect ${family === 6 ? `[${address}]` : address}:${port}`, e, c.strerror(e))
}

/** One datagram on a connected socket, without blocking: 0 when sent, else the errno. */
export function sendDatagram(fd: number, buf: Buffer): number {
  const c = load()
  return c.send(fd, buf, buf.length, MSG_DONTWAIT) >= 0 ? 0 : c.errno()
}

/** The text for an errno. */
export function errnoText(errno: number): string {
  return load().strerror(errno)
}

export function closeFd(fd: number): void {
  load().close(fd)
}

// ---- Netlink sockets in other network namespaces ---------------------------------------------------

const AF_NETLINK = 16
const SOCK_RAW = 3
const SOCK_CLOEXEC = 0o2000000
const CLONE_NEWNET = 0x40000000

/**
 * setns(2) of the calling thread into the network namespace open as `fd`. Only that thread moves: on
 * Node's main thread, whatever else runs there runs in that namespace until it is set back.
 */
export function enterNetns(fd: number, what: string): void {
  const c = load()
  if (c.setns(fd, CLONE_NEWNET) === 0) return
  const e = c.errno()
  throw new SocketOptionError(`${what}: setns`, e, c.strerror(e))
}

/** A NETLINK_ROUTE socket (close-on-exec) in the calling thread's network namespace. */
export function openRtnetlink(what: string): number {
  const c = load()
  const fd = c.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* NETLINK_ROUTE */)
  if (fd >= 0) return fd
  const e = c.errno()
  throw new SocketOptionError(`${what}: socket`, e, c.strerror(e))
}

/**
 * send(2) of `buf` to the kernel on `fd`, on a thread of libuv's pool: the kernel handles an rtnetlink request
 * within the send, and may take long over it (deleting a link waits for a grace period, any link change for
 * the kernel's lock on links). False when the send failed.
 */
export async function sendToKernelOffThread(fd: number, buf: Buffer): Promise<boolean> {
  return (await load().sendAsync(fd, buf, buf.length, 0)) >= 0
}

/** One datagram from `fd` without blocking: its length, 0 when none is queued; other failures throw. */
export function receiveDatagram(fd: number, buf: Buffer, what: string): number {
  const c = load()
  for (;;) {
    const n = c.recv(fd, buf, buf.length, MSG_DONTWAIT)
    if (n >= 0) return n
    const e = c.errno()
    if (e === EAGAIN) return 0
    if (e !== EINTR) throw new SocketOptionError(`${what}: recv`, e, c.strerror(e))
  }
}
