// Socket options Node's net and dgram do not expose (TCP_MD5SIG, IP_MINTTL, IPV6_MINHOPCOUNT, IP_TTL on a
// TCP socket, SO_ATTACH_FILTER), set with setsockopt(2) through koffi on a socket's file descriptor. It
// owns the FFI and the numbers; it decides nothing: a caller that needs an option and cannot have it fails.

import { createRequire } from 'node:module'

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
  attachFilter(fd: number, program: readonly SockFilterInstruction[]): number
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
      libc = {
        setsockopt: (fd, level, name, value, length) => set(fd, level, name, value, length) as number,
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
