// How the demo learns it must stop and remove what it made: SIGINT (Ctrl-C, which a terminal sends to the
// whole pipeline and `npm run` forwards once more), SIGTERM, SIGHUP (the terminal closed), or its output's
// reader gone (EPIPE from a pipe whose reader quit, EIO from a closed terminal). It owns the listeners and
// the person's output, which it stops writing once a stream failed, so a dead reader never kills the teardown.

import { constants } from 'node:os'

export type StopReason = 'SIGINT' | 'SIGTERM' | 'SIGHUP' | 'output closed'

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/**
 * The same signal again within this window is one request: `npm run` forwards the SIGINT the terminal has
 * already sent to every process of the pipeline, and that echo must not count as a second Ctrl-C.
 */
export const ECHO_WINDOW_MS = 1000

/** A stream the demo writes to: process.stdout or process.stderr, or a stand-in in tests. */
export interface OutputStream {
  write(text: string): unknown
  on(event: 'error', listener: (err: Error) => void): unknown
  off(event: 'error', listener: (err: Error) => void): unknown
}

/** What listen() attaches to: the process, or a stand-in in tests. */
export interface SignalSource {
  on(signal: (typeof SIGNALS)[number], listener: () => void): unknown
  off(signal: (typeof SIGNALS)[number], listener: () => void): unknown
}

export class StopRequests {
  /** Stop requests so far, echoes not counted. */
  count = 0
  first: StopReason | undefined
  private readonly dead = new Set<OutputStream>()
  private lastSignal: { readonly signal: StopReason; readonly at: number } | undefined

  /** `onStop` runs for every counted request: nth 1 tears down, nth 2 hurries it, later ones only wait. */
  constructor(
    private readonly onStop: (reason: StopReason, nth: number) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request; an echo of the last signal, or a closed output after a stop began, is not one. */
  request(reason: StopReason): void {
    const at = this.now()
    if (reason === 'output closed') {
      if (this.count > 0) return
    } else {
      const last = this.lastSignal
      this.lastSignal = { signal: reason, at }
      if (last !== undefined && last.signal === reason && at - last.at < ECHO_WINDOW_MS) return
    }
    this.count++
    this.first ??= reason
    this.onStop(reason, this.count)
  }

  /** The exit status a shell shows for a program stopped this way: 128 + the signal (SIGPIPE for a closed output). */
  exitCode(): number | undefined {
    if (this.first === undefined) return undefined
    const signal = this.first === 'output closed' ? 'SIGPIPE' : this.first
    return 128 + constants.signals[signal]
  }

  /** Writes to a stream that has not failed; after a failure the text is dropped. */
  write(stream: OutputStream, text: string): void {
    if (!this.dead.has(stream)) stream.write(text)
  }

  /** Listens for the signals and for failures of `streams`; returns what removes the listeners again. */
  listen(source: SignalSource, streams: readonly OutputStream[]): () => void {
    const onSignal = SIGNALS.map((s) => [s, () => this.request(s)] as const)
    for (const [s, fn] of onSignal) source.on(s, fn)
    const onError = streams.map((stream) => {
      const fn = (): void => {
        // Every later write would fail the same way (and raise another error): the stream is done.
        if (this.dead.has(stream)) return
        this.dead.add(stream)
        this.request('output closed')
      }
      stream.on('error', fn)
      return [stream, fn] as const
    })
    return () => {
      for (const [s, fn] of onSignal) source.off(s, fn)
      // A write that failed just before may still report its error: a listener stays that only marks the stream.
      for (const [stream, fn] of onError) {
        stream.off('error', fn)
        stream.on('error', () => this.dead.add(stream))
      }
    }
  }
}
