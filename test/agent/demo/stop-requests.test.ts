// StopRequests on its own: which signals and output failures count as requests to stop, the echo of a
// forwarded signal counted once, the exit status for each, and writes dropped once a stream failed.

import t from 'tap'
import { EventEmitter } from 'node:events'
import { ECHO_WINDOW_MS, StopRequests, type StopReason } from '../../../agent/demo/stop-requests.js'

class FakeStream extends EventEmitter {
  readonly written: string[] = []
  write(text: string): boolean {
    this.written.push(text)
    return true
  }
}

function setup() {
  let now = 1_000_000
  const seen: [StopReason, number][] = []
  const stops = new StopRequests((reason, nth) => seen.push([reason, nth]), () => now)
  const signals = new EventEmitter()
  const stdout = new FakeStream()
  const stderr = new FakeStream()
  const unlisten = stops.listen(signals, [stdout, stderr])
  return { stops, seen, signals, stdout, stderr, unlisten, advance: (ms: number) => void (now += ms) }
}

t.test('SIGINT, SIGTERM and SIGHUP each request a stop; the first decides the exit status', async (t) => {
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    const s = setup()
    t.equal(s.stops.exitCode(), undefined, 'no status before a stop')
    s.signals.emit(signal)
    t.same(s.seen, [[signal, 1]], `${signal} is a stop`)
    t.equal(s.stops.exitCode(), code, `${signal}: exit ${code}`)
  }
})

t.test("npm run's forwarded SIGINT is one Ctrl-C; a later one is a second", async (t) => {
  const s = setup()
  s.signals.emit('SIGINT')
  s.advance(5)
  s.signals.emit('SIGINT')
  t.same(s.seen, [['SIGINT', 1]], 'the echo within the window is not counted')
  s.advance(ECHO_WINDOW_MS)
  s.signals.emit('SIGINT')
  t.same(s.seen, [['SIGINT', 1], ['SIGINT', 2]], 'a Ctrl-C after the window hurries')
  s.signals.emit('SIGTERM')
  t.same(s.seen.at(-1), ['SIGTERM', 3], 'another signal counts at once')
  t.equal(s.stops.exitCode(), 130, 'the status stays the first stop\'s')
})

t.test('a failed stream stops the demo once and is never written again', async (t) => {
  const s = setup()
  s.stops.write(s.stdout, 'a\n')
  s.stdout.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))
  s.stdout.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))
  t.same(s.seen, [['output closed', 1]], 'one request for the reader gone')
  t.equal(s.stops.exitCode(), 141, 'exit 141, as for SIGPIPE')
  s.stops.write(s.stdout, 'b\n')
  s.stops.write(s.stderr, 'c\n')
  t.same(s.stdout.written, ['a\n'], 'nothing more to the failed stream')
  t.same(s.stderr.written, ['c\n'], 'the other stream still written')
  s.stderr.emit('error', Object.assign(new Error('write EIO'), { code: 'EIO' }))
  t.same(s.seen, [['output closed', 1]], 'a second failed stream is no further request')
})

t.test('a stream failing after a signal is not a second Ctrl-C', async (t) => {
  const s = setup()
  s.signals.emit('SIGHUP')
  s.stdout.emit('error', new Error('write EIO'))
  t.same(s.seen, [['SIGHUP', 1]])
  t.equal(s.stops.exitCode(), 129)
})

t.test('unlisten removes the signal listeners; a late stream error is still caught and only marks it', async (t) => {
  const s = setup()
  s.unlisten()
  t.equal(s.signals.listenerCount('SIGINT') + s.signals.listenerCount('SIGTERM') + s.signals.listenerCount('SIGHUP'), 0, 'no signal listener left')
  t.doesNotThrow(() => s.stdout.emit('error', new Error('write EPIPE')), 'an error after unlisten has a listener')
  t.same(s.seen, [], 'and requests nothing')
  s.stops.write(s.stdout, 'x')
  t.same(s.stdout.written, [], 'but the stream is not written again')
})
