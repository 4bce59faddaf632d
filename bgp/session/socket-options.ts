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

interface Libc {
  setsockopt(fd: number, level: number, name: number, value: Buffer, length: number): number
  strerror(errno: number): string
  errno(): number
}

let libc: Libc | Error | undefined

function load(): Libc {
  if (libc === undefined) {
    try {
      // createRequire: koffi is CommonJS with a native part, loaded only by an agent that sets an option.
      const koffi = createRequire(import.meta.url)('koffi') as {
        load(name: string): { func(sig: string): (...a: unknown[]) => unknown }
        errno(): number
      }
      const lib = koffi.load('libc.so.6')
      const set = lib.func('int setsockopt(int fd, int level, int name, const void *value, uint32_t length)')
      const strerror = lib.func('const char *strerror(int errnum)')
      libc = {
        setsockopt: (fd, level, name, value, length) => set(fd, level, name, value, length) as number,
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
