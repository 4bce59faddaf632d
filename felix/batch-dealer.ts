// The `ip -batch` scripts of one write: a diff's operations dealt out a chunk at a time to concurrent writers,
// each chunk made only when a writer's ip asks for more, so the faster writer takes more and all end together.
// A script may open with the write's head (the lines that make its nexthop objects); a script's line numbers
// map back to operations, because ip reports failures by line. Pure: nothing here runs ip.

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

  /** Whether every op has been dealt. */
  get done(): boolean {
    return this.next >= this.ops.length
  }

  /** Ops not dealt yet. */
  get remaining(): number {
    return this.ops.length - this.next
  }

  /**
   * A writer whose script stops taking chunks once it holds `limit` op lines (the next writer goes on), and
   * opens with the head unless `head` is false.
   */
  writer(limit = Infinity, head = true): BatchWriter {
    return new BatchWriter(this, this.chunk, limit, head)
  }

  /** The next chunk's first op and text; undefined once every op is dealt. */
  deal(): { from: number; text: string } | undefined {
    const from = this.next
    if (from >= this.ops.length) return undefined
    const to = Math.min(this.ops.length, from + this.chunk)
    this.next = to
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
  private end: () => void = () => {}
  /** Settles when the script has made its last line, or its reader stopped asking: not when ip is done. */
  readonly ended = new Promise<void>((resolve) => (this.end = resolve))

  constructor(
    private readonly dealer: BatchDealer,
    private readonly chunk: number,
    private readonly limit: number,
    private readonly withHead: boolean,
  ) {}

  /** Whether the script stopped at its limit with ops still to deal. */
  get full(): boolean {
    return !this.dealer.done && !this.taking()
  }

  /** Under the limit, or so little left that a fresh writer would cost more than it saves (a quarter of a limit). */
  private taking(): boolean {
    return this.starts.length * this.chunk < this.limit || this.dealer.remaining < this.limit / 4
  }

  *script(): Generator<string> {
    try {
      const head = this.withHead ? this.dealer.plan().head : []
      this.heads = head.length
      if (head.length > 0) yield head.join('\n') + '\n'
      while (this.taking()) {
        const c = this.dealer.deal()
        if (c === undefined) return
        this.starts.push(c.from)
        yield c.text
      }
    } finally {
      this.end()
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
