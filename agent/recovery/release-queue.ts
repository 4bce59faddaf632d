// The agent's durable queue of IPAM handles to release: one file per handle in the state dir, written
// before the first attempt fails silently, retried with backoff until the datastore confirms, and kept
// across restarts. It owns only the queue; the release itself is the caller's (through the IPAM service).

import { mkdirSync, readdirSync, rmSync, writeFileSync, renameSync } from 'node:fs'
import { join } from 'node:path'

const FIRST_RETRY_MS = 200
const MAX_RETRY_MS = 10_000
/** How often a release that waits for a live wiring to go is looked at again. */
const HELD_RETRY_MS = 5_000

export interface PendingReleasesOptions {
  readonly dir: string
  /** Releases the handle; throws while the datastore is unreachable. */
  readonly release: (handle: string) => Promise<void>
  /**
   * Whether a live wiring on this node holds the handle (a host veth records its attachment): then its
   * release waits, looked at again every few seconds, until the wiring is gone or its DEL or a new ADD
   * takes the handle off the queue. A failed ADD queues its handle; when that ADD was a repeat of an
   * attachment already wired, the addresses are that wiring's.
   */
  readonly held?: (handle: string) => Promise<boolean>
  /** Called when a release succeeds after one or more failed attempts (the datastore is back). */
  readonly onRecovered?: () => void
  readonly log?: (msg: string, fields: Record<string, unknown>) => void
}

export class PendingReleases {
  private readonly pending = new Set<string>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private delay = FIRST_RETRY_MS
  private running: Promise<void> | undefined
  private failedSince = false
  private closed = false
  /** Handles whose release was seen waiting for a live wiring (logged once each). */
  private readonly held = new Set<string>()
  /** Releases confirmed after a retry, for the metrics. */
  retried = 0

  constructor(private readonly options: PendingReleasesOptions) {
    mkdirSync(options.dir, { recursive: true, mode: 0o700 })
    for (const name of readdirSync(options.dir)) {
      if (name.startsWith('.')) rmSync(join(options.dir, name), { force: true })
      else this.pending.add(decodeURIComponent(name))
    }
  }

  get size(): number {
    return this.pending.size
  }

  has(handle: string): boolean {
    return this.pending.has(handle)
  }

  /** Queues `handle` (durably) and schedules an attempt soon. */
  add(handle: string): void {
    if (!this.pending.has(handle)) {
      const file = join(this.options.dir, encodeURIComponent(handle))
      const tmp = join(this.options.dir, `.${encodeURIComponent(handle)}`)
      writeFileSync(tmp, '', { mode: 0o600 })
      renameSync(tmp, file)
      this.pending.add(handle)
    }
    this.schedule(0)
  }

  /** Forgets `handle`: released, or taken over by a new ADD of the same handle. */
  drop(handle: string): void {
    this.held.delete(handle)
    if (!this.pending.delete(handle)) return
    rmSync(join(this.options.dir, encodeURIComponent(handle)), { force: true })
  }

  /** Starts attempting what a previous run left queued. */
  start(): void {
    if (this.pending.size > 0) this.schedule(0)
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    await this.running
  }

  private schedule(ms: number): void {
    if (this.closed || this.running !== undefined) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      let waiting = 0
      this.running = this.attempt()
        .then((n) => void (waiting = n))
        .finally(() => {
          this.running = undefined
          if (this.pending.size > waiting) this.schedule(this.delay)
          else if (this.pending.size > 0) this.schedule(HELD_RETRY_MS)
        })
    }, ms)
    this.timer.unref()
  }

  /** One pass over the queue. Returns how many releases wait for a live wiring. */
  private async attempt(): Promise<number> {
    let waiting = 0
    for (const handle of [...this.pending]) {
      if (this.closed) return waiting
      try {
        if (this.options.held !== undefined && (await this.options.held(handle))) {
          if (!this.held.has(handle)) this.options.log?.('IPAM release waits: a live wiring on this node records the handle', { handle })
          this.held.add(handle)
          waiting++
          continue
        }
        await this.options.release(handle)
      } catch (err) {
        this.failedSince = true
        this.delay = Math.min(this.delay * 2, MAX_RETRY_MS)
        this.options.log?.('IPAM release failed; retrying', { handle, err: (err as Error).message, retryMs: this.delay })
        return waiting
      }
      this.drop(handle)
      if (this.failedSince) this.retried++
      this.options.log?.('IPAM release confirmed', { handle })
    }
    this.delay = FIRST_RETRY_MS
    if (this.failedSince) {
      this.failedSince = false
      this.options.onRecovered?.()
    }
    return waiting
  }
}
