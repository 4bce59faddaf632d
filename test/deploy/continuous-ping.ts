// Continuous pings from one pod to another (100 ms apart, each reply stamped by ping -D) and the longest
// time without a reply they show. Runs `ping` until stop(); reading the gaps is pure (longestGap).
import { execa, type ResultPromise } from 'execa'

export interface PingRun {
  readonly from: string
  readonly to: string
  /** Stops the ping and returns the reply times (ms since the epoch) and how many were sent. */
  stop(): Promise<{ replies: number[]; sent: number }>
}

/** The reply times in ping -D output ("[1796120872.123456] 64 bytes from ..."). Pure. */
export function replyTimes(output: string): number[] {
  const out: number[] = []
  for (const m of output.matchAll(/^\[(\d+\.\d+)\] \d+ bytes from/gm)) out.push(Math.round(Number(m[1]) * 1000))
  return out
}

/** The longest interval with no reply inside [start, end] (the edges count as replies). Pure. */
export function longestGap(replies: readonly number[], start: number, end: number): { ms: number; at: number } {
  let best = { ms: 0, at: start }
  let last = start
  for (const t of [...replies.filter((r) => r >= start && r <= end), end]) {
    if (t - last > best.ms) best = { ms: t - last, at: last }
    last = t
  }
  return best
}

export function startPing(fromNs: string, fromName: string, to: string, toName: string): PingRun {
  // -D stamps each reply; -i 0.1 sends ten a second; -W 1 waits a second per probe before counting it lost.
  const child: ResultPromise = execa('ip', ['netns', 'exec', fromNs, 'ping', '-n', '-D', '-i', '0.1', '-W', '1', to], { reject: false, timeout: 600_000 })
  return {
    from: fromName,
    to: toName,
    async stop() {
      child.kill('SIGINT')
      const r = await child
      const stdout = String(r.stdout)
      const sent = Number(/(\d+) packets transmitted/.exec(stdout)?.[1] ?? 0)
      return { replies: replyTimes(stdout), sent }
    },
  }
}
