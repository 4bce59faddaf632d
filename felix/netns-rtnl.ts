// An rtnetlink socket in a given network namespace (a pod's, or this process's own), and LinkOps
// (rtnl-links.ts) written through it one by one, as `ip -batch` does: the first refusal stops the run. A
// socket stays in the namespace it was made in, so entering the pod's is needed only to make it.

import { closeSync, openSync } from 'node:fs'
import { closeFd, enterNetns, openRtnetlink, receiveDatagram, sendToKernelOffThread, socketOptionsAvailable, strerror } from '../bgp/index.js'
import { LinkWriter, linkOpNeedsIndex, linkOpText, type LinkOp } from './rtnl-links.js'
import { NLMSG_ERROR, RTM_NEWLINK, RtnlWriter, readReplies, type Reply } from './rtnl.js'

const ENODEV = 19

/** The kernel refused op `index` of a run (or its device's lookup): `errno` is its answer. */
export class LinkOpRefused extends Error {
  constructor(
    readonly index: number,
    readonly errno: number,
    message: string,
  ) {
    super(message)
    this.name = 'LinkOpRefused'
  }
}

/** This process's main thread's namespace, open for the life of the process: where each setns returns to. */
let home: number | undefined

/**
 * A NETLINK_ROUTE socket made in `netns` (a path such as /run/netns/NAME) on the calling thread. setns(2)
 * moves the calling thread alone, and the three calls (setns in, socket, setns back) run synchronously on
 * Node's main thread, so no other JS, and none of libuv's threads, runs in the pod's namespace. A thread
 * that could not come back would do everything after in the pod's: the process stops instead.
 */
function socketIn(netns: string): number {
  home ??= openSync('/proc/thread-self/ns/net', 'r')
  const target = openSync(netns, 'r')
  try {
    enterNetns(target, `entering ${netns}`)
    try {
      return openRtnetlink(`rtnetlink socket in ${netns}`)
    } finally {
      try {
        enterNetns(home, 'returning to the agent\'s own network namespace')
      } catch (err) {
        process.stderr.write(`pinto: ${(err as Error).message}: stopping, as anything further would act in ${netns}\n`)
        process.abort()
      }
    }
  } finally {
    closeSync(target)
  }
}

export class NetnsRtnl {
  private seq = 1
  private readonly rx = Buffer.alloc(1 << 15)
  /** Sends under way on libuv's threads: the socket is closed once they are done. */
  private pending: Promise<unknown> = Promise.resolve()
  private closed = false

  private constructor(
    private readonly fd: number,
    /** The namespace, for messages: its path, or undefined for this process's own. */
    readonly netns: string | undefined,
  ) {}

  /** Whether sockets can be made here (the FFI loads), or why not. */
  static available(): { ok: true } | { ok: false; reason: string } {
    return socketOptionsAvailable()
  }

  /** A socket in `netns`, or in this process's own namespace when undefined. Throws when it cannot be entered. */
  static open(netns: string | undefined): NetnsRtnl {
    return new NetnsRtnl(netns === undefined ? openRtnetlink('rtnetlink socket') : socketIn(netns), netns)
  }

  /** Closes the socket once any send still under way is done. */
  close(): void {
    if (this.closed) return
    this.closed = true
    void this.pending.finally(() => closeFd(this.fd))
  }

  /**
   * Writes `ops` in order, each waited for; the first one refused stops the run and throws LinkOpRefused
   * with its index. Each request is sent from one of libuv's threads: the kernel handles it within the send,
   * which waits there for the kernel's lock on links (held long while namespaces are made and torn down,
   * as in a burst of pod starts), not on the main thread. Its answer is queued by the time the send returns.
   */
  async run(ops: readonly LinkOp[]): Promise<void> {
    const indexes = new Map<string, number>()
    const fds = new Map<string, number>()
    try {
      for (const [i, o] of ops.entries()) {
        const dev = linkOpNeedsIndex(o)
        if (dev !== undefined && !indexes.has(dev)) indexes.set(dev, await this.index(dev, i, o))
        // A namespace the peer is made in is held open for the send alone.
        if (o.op === 'veth' && o.peerNetns !== undefined && !fds.has(o.peerNetns)) fds.set(o.peerNetns, openSync(o.peerNetns, 'r'))
        const w = new LinkWriter((d) => indexes.get(d), (path) => fds.get(path))
        const seq = this.nextSeq()
        w.write(o, seq)
        const r = await this.exchange(w.bytes(), seq, linkOpText(o))
        if (r.error !== undefined && r.error !== 0) throw new LinkOpRefused(i, -r.error, `${linkOpText(o)}: ${strerror(-r.error)}`)
      }
    } finally {
      for (const fd of fds.values()) closeSync(fd)
    }
  }

  /**
   * Deletes link `dev`. The kernel answers only after the link's last references go (a grace period), so
   * the request is sent from one of libuv's threads; done when `gone` says the link is out of sight or
   * the answer comes, whichever is first. A link that is not there is no failure.
   */
  async remove(dev: string, gone: () => boolean = () => false): Promise<void> {
    const w = new LinkWriter()
    const seq = this.nextSeq()
    const op: LinkOp = { op: 'del', dev }
    w.write(op, seq)
    const bytes = Buffer.from(w.bytes())
    const sent = sendToKernelOffThread(this.fd, bytes)
    this.pending = this.pending.then(() => sent.catch(() => false))
    const answered = sent.then((ok) => {
      if (!ok) throw new LinkOpRefused(0, 0, `${linkOpText(op)}: the request could not be sent`)
      const r = this.answer(seq, linkOpText(op))
      if (r.error !== undefined && r.error !== 0 && -r.error !== ENODEV) throw new LinkOpRefused(0, -r.error, `${linkOpText(op)}: ${strerror(-r.error)}`)
    })
    let timer: NodeJS.Timeout | undefined
    const seen = new Promise<void>((resolve) => {
      const look = (): void => {
        if (gone()) resolve()
        else timer = setTimeout(look, 1)
      }
      timer = setTimeout(look, 1)
    })
    try {
      await Promise.race([answered, seen])
    } finally {
      clearTimeout(timer)
      // An answer that came after the link was seen gone is read and dropped with the socket.
      answered.catch(() => undefined)
    }
  }

  private nextSeq(): number {
    const s = this.seq
    this.seq = (this.seq % 0x7fffffff) + 1
    return s
  }

  /** The index of `dev` here, by RTM_GETLINK; LinkOpRefused (as op `at`) when there is none. */
  private async index(dev: string, at: number, o: LinkOp): Promise<number> {
    const w = new RtnlWriter(256)
    const seq = this.nextSeq()
    w.getLink(dev, seq)
    const r = await this.exchange(w.bytes(), seq, `link show ${dev}`)
    if (r.type === RTM_NEWLINK && r.ifindex !== undefined) return r.ifindex
    const errno = r.error !== undefined ? -r.error : ENODEV
    throw new LinkOpRefused(at, errno, `${linkOpText(o)}: ${dev}: ${strerror(errno)}`)
  }

  /** One request sent off the main thread (the socket closed only after it), and its answer. */
  private async exchange(bytes: Uint8Array, seq: number, what: string): Promise<Reply> {
    const sent = sendToKernelOffThread(this.fd, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    this.pending = this.pending.then(() => sent.catch(() => false))
    if (!(await sent)) throw new LinkOpRefused(0, 0, `${what}: the request could not be sent`)
    return this.answer(seq, what)
  }

  /** The queued answer to `seq`; answers to earlier requests (one given up on) are passed over. */
  private answer(seq: number, what: string): Reply {
    for (;;) {
      const n = receiveDatagram(this.fd, this.rx, what)
      if (n === 0) throw new LinkOpRefused(0, 0, `${what}: no answer from the kernel${this.netns !== undefined ? ` in ${this.netns}` : ''}`)
      for (const r of readReplies(this.rx.subarray(0, n))) if (r.seq === seq && (r.type === NLMSG_ERROR || r.type === RTM_NEWLINK)) return r
    }
  }
}
