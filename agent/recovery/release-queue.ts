// The handles the agent must release, each a `release` record of the journal until the datastore confirms:
// retried with backoff, kept across restarts, and made only once no live wiring on this node holds the
// handle. It owns the queue and its timing; the release itself is the caller's (through the IPAM service).

import { readAliases } from '../../cni/index.js'
import { aliasNames } from '../../cni/index.js'
import type { Journal } from './journal.js'
import { type ReleaseCause, releaseId } from '../../cni/index.js'

const FIRST_RETRY_MS = 200
const MAX_RETRY_MS = 10_000
/** How often a release that waits for a live wiring to go is looked at again. */
const HELD_RETRY_MS = 5_000

export interface ReleaseQueueOptions {
  readonly journal: Journal
  /** Releases the handle; throws while the datastore is unreachable. */
  readonly release: (handle: string) => Promise<void>
  /**
   * Whether a live wiring on this node holds the handle (a host veth records its attachment): then its
   * release waits, looked at again every few seconds, until the wiring is gone or its DEL or a new ADD
   * takes the handle off the queue. A failed ADD queues its handle; when that ADD was a repeat of an
   * attachment already wired, the addresses are that wiring's. By default, read from this netns's links.
   */
  readonly held?: (handle: string) => Promise<boolean>
  /** Called when a release succeeds after one or more failed attempts (the datastore is back). */
  readonly onRecovered?: () => void
  readonly log?: (msg: string, fields: Record<string, unknown>) => void
}

export class ReleaseQueue {
  /** The handles queued (a release record open and handed to the queue), in order. */
  private readonly queued = new Set<string>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private delay = FIRST_RETRY_MS
  private running: Promise<void> | undefined
  private failedSince = false
  private closed = false
  /** Handles whose release was seen waiting for a live wiring (logged once each). */
  private readonly waiting = new Set<string>()
  /** Releases confirmed after a retry, for the metrics. */
  retried = 0
  readonly held: (handle: string) => Promise<boolean>

  constructor(private readonly options: ReleaseQueueOptions) {
    this.held = options.held ?? aliasHeld
  }

  get size(): number {
    return this.queued.size
  }

  has(handle: string): boolean {
    return this.queued.has(handle)
  }

  /** Records that `handle` is to be released (before the attempt), unless it is already. */
  record(handle: string, cause: ReleaseCause, extra: { containerId?: string; hostVeth?: string } = {}): void {
    if (this.options.journal.get(releaseId(handle)) === undefined) this.options.journal.append({ op: 'release', id: releaseId(handle), handle, cause, ...extra })
  }

  /** Queues `handle` (recorded first) and schedules an attempt soon. */
  add(handle: string, cause: ReleaseCause, extra: { containerId?: string; hostVeth?: string } = {}): void {
    this.record(handle, cause, extra)
    this.queued.add(handle)
    this.schedule(0)
  }

  /** Forgets `handle`: released, or taken over by a new ADD of the same handle. */
  drop(handle: string): void {
    this.waiting.delete(handle)
    this.queued.delete(handle)
    this.options.journal.close(releaseId(handle))
  }

  /** Starts attempting what is queued (what a previous run left, once replayed). */
  start(): void {
    if (this.queued.size > 0) this.schedule(0)
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
          if (this.queued.size > waiting) this.schedule(this.delay)
          else if (this.queued.size > 0) this.schedule(HELD_RETRY_MS)
        })
    }, ms)
    this.timer.unref()
  }

  /** One pass over the queue. Returns how many releases wait for a live wiring. */
  private async attempt(): Promise<number> {
    let waiting = 0
    for (const handle of [...this.queued]) {
      if (this.closed) return waiting
      try {
        if (await this.held(handle)) {
          if (!this.waiting.has(handle)) this.options.log?.('IPAM release waits: a live wiring on this node records the handle', { handle })
          this.waiting.add(handle)
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

/** Whether a link of this netns records the attachment whose handle is `handle` (its live wiring). */
async function aliasHeld(handle: string): Promise<boolean> {
  for (const alias of (await readAliases()).values()) if (aliasNames(alias, handle)) return true
  return false
}
