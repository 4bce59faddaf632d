// Continuous pings from one pod to another (100 ms apart, each reply stamped by ping -D) and the longest
// time without a reply they show. Runs `ping` until stop(); reading the gaps is pure (longestGap), as is
// reading which routes a BIRD peer dropped from its route trace (birdWithdrawals).
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

/**
 * Pings `to` ten times a second from a network namespace: `enter` is the command that runs a program in it
 * (`ip netns exec NS`, or `nsenter -t PID -n` for a pod's).
 */
export function startPing(enter: readonly string[], fromName: string, to: string, toName: string): PingRun {
  // -D stamps each reply; -i 0.1 sends ten a second; -W 1 waits a second per probe before counting it lost.
  const [cmd = 'ip', ...args] = enter
  const child: ResultPromise = execa(cmd, [...args, 'ping', '-n', '-D', '-i', '0.1', '-W', '1', to], { reject: false, timeout: 900_000 })
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

/** What BIRD's route trace ("debug all { routes }") shows of the routes it imported from its BGP peers. */
export interface BirdWithdrawals {
  /** Every route change imported from a peer ("PEER.ipv4 > ..."). */
  readonly imports: string[]
  /** Prefixes that left BIRD's table ("removed [sole]": no other path stayed). */
  readonly gone: string[]
  /** Every path withdrawn, whether or not another path stayed. */
  readonly paths: string[]
  /** Withdrawals, by peer name, of the prefixes `own` says that peer originates. */
  readonly ownWithdrawn: string[]
}

/** Reads a BIRD log's route trace; `own(peer)` gives the address inside the block that peer owns. Pure. */
export function birdWithdrawals(log: string, own: (peer: string) => string | undefined, covers: (prefix: string, address: string) => boolean): BirdWithdrawals {
  const imports = log.split('\n').filter((l) => /\.ipv4 > /.test(l))
  const paths = imports.filter((l) => / > removed/.test(l))
  return {
    imports,
    gone: imports.filter((l) => / > removed \[sole\]/.test(l)),
    paths,
    ownWithdrawn: paths.filter((l) => {
      const m = /(\S+)\.ipv4 > removed\S* (?:\[\w+\] )?(\S+)/.exec(l)
      const address = m === null ? undefined : own(m[1]!)
      return address !== undefined && covers(m![2]!, address)
    }),
  }
}
