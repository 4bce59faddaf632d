// Building blocks of the graceful-restart tests: a watcher that keeps probing a RIB for the whole restart
// and remembers every moment a route was missing, and a reading of the capture with pinto's codec that
// lists every withdrawal, End-of-RIB and OPEN restart flag on the wire.

import { codecOptions, decodeMessage, formatPrefix, type BgpMessage } from '../../bgp/codec/index.js'
import type { TcpConnection } from '../harness/pcap.js'
import { splitMessages } from '../harness/bgp-hex.js'

/** Probes `present` back to back until stop(); counts samples and records the ones that said false. */
export class Watcher {
  samples = 0
  readonly misses: string[] = []
  private running = true
  private readonly loop: Promise<void>

  constructor(
    readonly what: string,
    present: () => Promise<boolean | string>,
  ) {
    this.loop = (async () => {
      while (this.running) {
        let r: boolean | string
        try {
          r = await present()
        } catch (err) {
          r = `probe failed: ${(err as Error).message}`
        }
        this.samples++
        if (r !== true) this.misses.push(`${new Date().toISOString()} ${typeof r === 'string' ? r : 'missing'}`)
        await new Promise((res) => setTimeout(res, 20))
      }
    })()
  }

  async stop(): Promise<void> {
    this.running = false
    await this.loop
  }
}

export interface WireMessage {
  readonly from: string
  readonly to: string
  /** Index of the TCP connection between the two, in capture order (0 = before the restart). */
  readonly connection: number
  readonly msg: BgpMessage
}

/** Every BGP message exchanged between x and y, over every connection the capture holds, decoded. */
export function wireMessages(conns: readonly TcpConnection[], x: string, y: string): WireMessage[] {
  const out: WireMessage[] = []
  const between = conns.filter((c) => (c.a.src === x && c.a.dst === y) || (c.a.src === y && c.a.dst === x))
  between.forEach((c, i) => {
    for (const s of [c.a, c.b]) {
      // A connection cut by SIGKILL may end inside a message: decode only whole ones.
      let frames: Buffer[]
      try {
        frames = splitMessages(s.data)
      } catch {
        frames = splitMessages(s.data.subarray(0, wholeLength(s.data)))
      }
      for (const f of frames) out.push({ from: s.src, to: s.dst, connection: i, msg: decodeMessage(f, codecOptions({ extendedMessage: true })) })
    }
  })
  return out
}

function wholeLength(data: Buffer): number {
  let off = 0
  while (off + 19 <= data.length && off + data.readUInt16BE(off + 16) <= data.length) off += data.readUInt16BE(off + 16)
  return off
}

/** The prefixes of `watched` withdrawn by any UPDATE in the messages, as "from->to prefix". */
export function withdrawals(msgs: readonly WireMessage[], watched: readonly string[]): string[] {
  const out: string[] = []
  for (const m of msgs) {
    if (m.msg.type !== 'update') continue
    const gone = [...m.msg.withdrawn, ...(m.msg.mpUnreach?.withdrawn ?? [])].map(formatPrefix)
    for (const p of gone) if (watched.includes(p)) out.push(`${m.from}->${m.to} ${p}`)
  }
  return out
}

/** Whether `from` sent an OPEN with the graceful-restart Restart State bit on connection `connection`. */
export function openRestartState(msgs: readonly WireMessage[], from: string, connection: number): boolean | undefined {
  const open = msgs.find((m) => m.from === from && m.connection === connection && m.msg.type === 'open')
  if (open === undefined || open.msg.type !== 'open') return undefined
  const gr = open.msg.capabilities.find((c) => c.kind === 'graceful-restart')
  return gr !== undefined && gr.kind === 'graceful-restart' ? gr.restartState : undefined
}

export function sentEndOfRib(msgs: readonly WireMessage[], from: string, connection: number): boolean {
  return msgs.some((m) => m.from === from && m.connection === connection && m.msg.type === 'update' && m.msg.endOfRib !== undefined)
}

/** The index of the last connection that carried messages (the session after a restart). */
export function lastConnection(msgs: readonly WireMessage[]): number {
  return msgs.reduce((n, m) => Math.max(n, m.connection), 0)
}
