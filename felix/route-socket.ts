// felix's rtnetlink socket: route messages (built by rtnl.ts) written straight to the kernel of the
// process's own network namespace, with no `ip` process per write. The socket is the raw one of the
// `netlink` package, a prebuilt N-API addon (nothing is compiled at install); when it cannot load, felix
// writes through `ip -batch` instead. The kernel handles each send in the sending call, in order, so a
// chunk's last message asks for an acknowledgement and its answer means the whole chunk is done; the
// others are answered only when they fail.

import { getSystemErrorMap } from 'node:util'
import type { KernelRoute } from './kernel-route.js'
import { NLMSG_ERROR, RTM_NEWLINK, RtnlWriter, readReplies, type Reply } from './rtnl.js'
import { linkDumpReader, linkDumpRequest, routeDumpReader, routeDumpRequest, type DumpFilter, type DumpReader } from './rtnl-routes.js'
import type { Family } from '../net/index.js'

interface RawSocket {
  send(msg: Uint8Array, options?: { port?: number }, callback?: (error?: Error) => void): void
  on(event: 'message', listener: (msg: Buffer) => void): unknown
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'truncatedMessage', listener: (msg: Buffer, info: { truncated?: number }) => void): unknown
  close(): void
  unref(): void
}

/**
 * Messages per send. Each failed message is answered with a copy of itself, and the kernel drops answers
 * once the socket's receive buffer is full: a chunk this size fits in the default buffer even when every
 * route in it fails.
 */
const CHUNK = 200
const ANSWER_TIMEOUT_MS = 10_000
/**
 * Bytes each receive takes (one datagram). The kernel sizes a dump's datagrams by the reads it has seen, up
 * to 32 KB: the addon's default (peek, then read exactly the datagram) keeps them small, and a
 * dump then takes many times as many datagrams. Nothing the kernel sends this
 * socket is larger; a datagram that did not fit would fail the socket (felix goes back to `ip`).
 */
const RECEIVE_BYTES = 1 << 15
/** A dump read again because the table changed under it (NLM_F_DUMP_INTR) gives up after this many tries. */
const DUMP_TRIES = 5

/** The text of a negative errno from the kernel, e.g. "ENETUNREACH (network is unreachable)". */
export function errnoText(error: number): string {
  const known = getSystemErrorMap().get(error)
  return known === undefined ? `netlink: errno ${-error}` : `netlink: ${known[0]} (${known[1]})`
}

export class RouteSocket {
  private seq = 1
  private readonly waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>()
  /** Failures of messages that asked for no answer, by seq, until their write collects them. */
  private readonly failed = new Map<number, number>()
  private broken: Error | undefined
  private readonly writer = new RtnlWriter()
  /** The dump under way (a netlink socket runs one at a time): its seq, reader and promise's ends. */
  private dumping: { seq: number; reader: DumpReader; timer: NodeJS.Timeout; resolve: () => void; reject: (e: Error) => void } | undefined
  private dumps: Promise<unknown> = Promise.resolve()

  private constructor(private readonly raw: RawSocket) {
    raw.on('message', (msg) => this.onMessage(msg))
    raw.on('error', (err) => this.fail(err))
    // Part of an answer lost: which writes or routes it told of is unknown.
    raw.on('truncatedMessage', (_msg, info) => this.fail(new Error(`netlink: a datagram of ${info.truncated ?? '?'} bytes did not fit the ${RECEIVE_BYTES}-byte receive buffer`)))
    // Open or not, the socket never keeps the agent's process alive on its own.
    raw.unref()
  }

  /** A socket in this process's namespace, or why there is none (the addon did not load, say). */
  static async open(): Promise<RouteSocket | Error> {
    try {
      const mod = (await import('netlink/dist/raw.js')) as { default?: { RawNetlinkSocket: new (protocol: number, options?: object) => RawSocket }; RawNetlinkSocket?: new (protocol: number, options?: object) => RawSocket }
      const Raw = mod.RawNetlinkSocket ?? mod.default?.RawNetlinkSocket
      if (Raw === undefined) return new Error('the netlink package has no RawNetlinkSocket')
      return new RouteSocket(new Raw(0 /* NETLINK_ROUTE */, { messagePeeking: false, msgBufferSize: RECEIVE_BYTES }))
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err))
    }
  }

  /** Unusable from now on (the socket failed or was closed); felix then goes back to `ip`. */
  get error(): Error | undefined {
    return this.broken
  }

  close(): void {
    this.fail(new Error('route socket closed'))
    this.raw.close()
  }

  /** `count` consecutive sequence numbers for one write's messages; the first is returned. */
  private reserve(count: number): number {
    const first = this.seq
    this.seq = (this.seq + count) % 0x7fffffff || 1
    if (this.seq < first) {
      // Wrapped: start again from 1, so a write's numbers stay consecutive.
      this.seq = count + 1
      return 1
    }
    return first
  }

  private onMessage(msg: Buffer): void {
    // A dump's datagrams hold its messages only: the first one's seq says whose they are.
    const d = this.dumping
    if (d !== undefined && msg.length >= 12 && msg.readUInt32LE(8) === d.seq) {
      try {
        d.timer.refresh()
        if (!d.reader.feed(msg)) return
        d.resolve()
      } catch (err) {
        d.reject(err as Error)
      }
      return
    }
    let replies: Reply[]
    try {
      replies = readReplies(msg)
    } catch (err) {
      this.fail(err as Error)
      return
    }
    for (const r of replies) {
      const w = this.waiting.get(r.seq)
      if (w !== undefined) {
        this.waiting.delete(r.seq)
        w.resolve(r)
      } else if (r.type === NLMSG_ERROR && r.error !== undefined && r.error !== 0) this.failed.set(r.seq, r.error)
    }
  }

  private fail(err: Error): void {
    this.broken ??= err
    for (const w of this.waiting.values()) w.reject(err)
    this.waiting.clear()
    this.dumping?.reject(err)
  }

  private answer(seq: number): Promise<Reply> {
    if (this.broken !== undefined) return Promise.reject(this.broken)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(seq)
        reject(new Error(`netlink: no answer to message ${seq} within ${ANSWER_TIMEOUT_MS} ms`))
      }, ANSWER_TIMEOUT_MS)
      this.waiting.set(seq, {
        resolve: (r) => {
          clearTimeout(timer)
          resolve(r)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      })
    })
  }

  private send(msg: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => this.raw.send(msg, {}, (err) => (err === undefined ? resolve() : reject(err))))
  }

  /** Runs one dump to its NLMSG_DONE; dumps wait for each other (the kernel answers EBUSY otherwise). */
  private dump(request: (seq: number) => Uint8Array, reader: DumpReader): Promise<void> {
    const run = async (): Promise<void> => {
      if (this.broken !== undefined) throw this.broken
      const seq = this.reserve(1)
      const done = new Promise<void>((resolve, reject) => {
        const end = (): void => {
          clearTimeout(timer)
          this.dumping = undefined
        }
        // A dump the kernel stopped answering may still be running on the socket: the socket is given up.
        const timer = setTimeout(() => this.fail(new Error(`netlink: dump ${seq} stalled: no datagram within ${ANSWER_TIMEOUT_MS} ms`)), ANSWER_TIMEOUT_MS)
        this.dumping = {
          seq,
          reader,
          timer,
          resolve: () => {
            end()
            resolve()
          },
          reject: (e) => {
            end()
            reject(e)
          },
        }
      })
      try {
        await this.send(request(seq))
      } catch (err) {
        this.dumping?.reject(err as Error)
      }
      await done
    }
    const p = this.dumps.then(run, run)
    this.dumps = p.catch(() => undefined)
    return p
  }

  /** Runs a dump again while the kernel marks it interrupted (the table changed meanwhile). */
  private async consistent<T extends { reader: DumpReader }>(what: string, make: () => T, request: (seq: number) => Uint8Array): Promise<T> {
    for (let i = 1; ; i++) {
      const out = make()
      await this.dump(request, out.reader)
      if (!out.reader.interrupted) return out
      if (i === DUMP_TRIES) throw new Error(`netlink: the ${what} dump was interrupted ${i} times in a row (it kept changing)`)
    }
  }

  /**
   * The routes of `table` in each family (RTM_GETROUTE dumps, after an RTM_GETLINK dump for the device
   * names): the values parseRouteJson makes of `ip -N -json route show`. A route through a device the
   * link dump did not have (made in between) has both dumps read again, once. `filter` is shown each
   * route as it is read and says which to keep (a dump read again shows them again).
   */
  async readTable(families: readonly Family[], table: number, filter?: DumpFilter): Promise<KernelRoute[]> {
    for (let pass = 0; ; pass++) {
      const { links } = await this.consistent('link', linkDumpReader, linkDumpRequest)
      const out: KernelRoute[] = []
      let unknown = 0
      for (const f of families) {
        const r = await this.consistent(`IPv${f} route`, () => routeDumpReader(f, table, links, filter), (seq) => routeDumpRequest(f, table, seq))
        unknown += r.unknownLinks()
        for (const x of r.routes) out.push(x)
      }
      if (unknown === 0 || pass === 1) return out
    }
  }

  /** Device indexes by name, asked of the kernel; a device it does not know is left out. */
  async linkIndexes(names: Iterable<string>): Promise<Map<string, number>> {
    const out = new Map<string, number>()
    await Promise.all(
      [...new Set(names)].map(async (name) => {
        const seq = this.reserve(1)
        const w = new RtnlWriter(256)
        w.getLink(name, seq)
        const answered = this.answer(seq)
        await this.send(w.bytes())
        const r = await answered
        if (r.type === RTM_NEWLINK && r.ifindex !== undefined) out.set(name, r.ifindex)
      }),
    )
    return out
  }

  /**
   * Writes `count` messages, message i made by `encode` with the sequence number it is given (false: it
   * cannot be written this way, and its index is returned in `skipped`), in chunks, each waited for before
   * the next. Returns the kernel's refusals by index. Rejects when the socket fails: which messages took
   * effect is then unknown, and the caller reads the kernel again.
   */
  async write(count: number, encode: (i: number, seq: number, w: RtnlWriter) => boolean): Promise<{ failures: Map<number, string>; skipped: number[] }> {
    const first = this.reserve(count)
    const failures = new Map<number, string>()
    const skipped: number[] = []
    const w = this.writer
    let inChunk = 0
    const flush = async (): Promise<void> => {
      w.ackLast()
      const seq = w.lastSeq()
      const answered = this.answer(seq)
      // The buffer is reused only once the send is done (its callback came).
      await this.send(w.bytes())
      w.reset()
      inChunk = 0
      const r = await answered
      if (r.error !== undefined && r.error !== 0) failures.set(seq - first, errnoText(r.error))
    }
    w.reset()
    for (let i = 0; i < count; i++) {
      if (!encode(i, first + i, w)) {
        skipped.push(i)
        continue
      }
      if (++inChunk === CHUNK) await flush()
    }
    if (inChunk > 0) await flush()
    for (const [seq, error] of this.failed) {
      const i = seq - first
      if (i >= 0 && i < count) {
        failures.set(i, errnoText(error))
        this.failed.delete(seq)
      }
    }
    return { failures, skipped }
  }
}
