// The `ip -batch` scripts of one write: a diff's operations dealt out a chunk at a time to concurrent writers,
// each chunk made only when a writer's ip asks for more, so the faster writer takes more and all end together.
// Every script starts with the same head (the lines that make the write's nexthop objects); a script's line
// numbers map back to operations, because ip reports failures by line. Pure: nothing here runs ip.

import { deleteLine, replaceLineVia } from './kernel-route.js'
import type { RouteOp } from './route-diff.js'

/** What the scripts share, worked out once, on the first chunk any writer asks for. */
export interface BatchPlan {
  /** Lines every script runs first (e.g. `nexthop replace ...`), without newlines. */
  readonly head: readonly string[]
  /** The nexthop object op i's route goes through, if any. */
  readonly nhid?: (i: number) => number | undefined
}

export interface BatchDealerOptions {
  /** Lines per chunk (default 256: small enough that writers end within a few ms of each other). */
  readonly chunk?: number
  readonly plan?: () => BatchPlan
  /** Told of each chunk of ops, [from, to), as it is dealt: before any writer can have run it. */
  readonly onDealt?: (from: number, to: number) => void
}

/** What line i (0-based) of a writer's script was. */
export type ScriptLine = { readonly head: number } | { readonly op: number }

export class BatchDealer {
  private next = 0
  private planned: BatchPlan | undefined
  private readonly chunk: number

  constructor(
    private readonly ops: readonly RouteOp[],
    private readonly opts: BatchDealerOptions = {},
  ) {
    this.chunk = Math.max(1, opts.chunk ?? 256)
  }

  /** How many ops have been dealt; ops from here on were taken by no writer (every writer ended early). */
  get dealt(): number {
    return this.next
  }

  plan(): BatchPlan {
    this.planned ??= this.opts.plan?.() ?? { head: [] }
    return this.planned
  }

  writer(): BatchWriter {
    return new BatchWriter(this, this.chunk)
  }

  /** The next chunk's first op and text; undefined once every op is dealt. */
  deal(): { from: number; text: string } | undefined {
    const from = this.next
    if (from >= this.ops.length) return undefined
    const to = Math.min(this.ops.length, from + this.chunk)
    this.next = to
    this.opts.onDealt?.(from, to)
    const nhid = this.plan().nhid
    let text = ''
    for (let i = from; i < to; i++) {
      const o = this.ops[i] as RouteOp
      text += (o.op === 'replace' ? replaceLineVia(o.route, nhid?.(i)) : deleteLine(o.route)) + '\n'
    }
    return { from, text }
  }
}

/** One writer's script, and the map from its line numbers back to ops. */
export class BatchWriter {
  private heads = 0
  /** First op of each chunk this writer took, in script order; every chunk is full but the write's last. */
  private readonly starts: number[] = []

  constructor(
    private readonly dealer: BatchDealer,
    private readonly chunk: number,
  ) {}

  *script(): Generator<string> {
    const { head } = this.dealer.plan()
    this.heads = head.length
    if (head.length > 0) yield head.join('\n') + '\n'
    for (let c = this.dealer.deal(); c !== undefined; c = this.dealer.deal()) {
      this.starts.push(c.from)
      yield c.text
    }
  }

  line(i: number): ScriptLine | undefined {
    if (i < 0) return undefined
    if (i < this.heads) return { head: i }
    const k = i - this.heads
    const start = this.starts[Math.floor(k / this.chunk)]
    if (start === undefined) return undefined
    const op = start + (k % this.chunk)
    return op < this.dealer.dealt ? { op } : undefined
  }

  /** Every op this writer took. */
  *taken(): Generator<number> {
    for (const s of this.starts) for (let i = s; i < Math.min(s + this.chunk, this.dealer.dealt); i++) yield i
  }
}

/** The whole script of a single writer, for ops without nexthop objects (line N+1 is ops[N]). */
export function batchScript(ops: readonly RouteOp[]): string {
  return [...new BatchDealer(ops).writer().script()].join('')
}
