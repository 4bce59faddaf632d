// Go duration syntax as Calico's metav1.Duration fields take it: values in milliseconds, and the
// offset of the first bad character for what Go's time.ParseDuration refuses.
import t from 'tap'
import { DurationError, formatDuration, parseDuration } from '../../config/duration.js'

const good: [string, number][] = [
  ['0', 0],
  ['0s', 0],
  ['120s', 120_000],
  ['1m30s', 90_000],
  ['500ms', 500],
  ['1.5h', 5_400_000],
  ['2h45m', 9_900_000],
  ['1h0m0s', 3_600_000],
  ['.5s', 500],
  ['1.s', 1000],
  ['1500us', 1.5],
  ['1500µs', 1.5],
  ['1500μs', 1.5],
  ['2000000ns', 2],
  ['+10s', 10_000],
  ['-10s', -10_000],
  ['1m1m', 120_000],
]

t.test('valid Go durations give milliseconds', async (t) => {
  for (const [text, ms] of good) t.equal(parseDuration(text), ms, text)
})

const bad: [string, number][] = [
  ['', 0],
  ['-', 1],
  ['120', 3],
  ['10x', 2],
  ['1d', 1],
  ['s', 0],
  ['.s', 0],
  ['1m 30s', 2],
  [' 1s', 0],
  ['1S', 1],
  ['1m30', 4],
]

t.test('invalid durations throw DurationError with the offset', async (t) => {
  for (const [text, offset] of bad) {
    try {
      parseDuration(text)
      t.fail(`${JSON.stringify(text)} should fail`)
    } catch (e) {
      t.ok(e instanceof DurationError, JSON.stringify(text))
      t.equal((e as DurationError).offset, offset, `${JSON.stringify(text)} fails at ${offset}`)
    }
  }
})

t.test('formatDuration writes what parseDuration reads back', async (t) => {
  for (const ms of [0, 500, 1000, 90_000, 3_600_000, 5_430_000]) {
    t.equal(parseDuration(formatDuration(ms)), ms, formatDuration(ms))
  }
  t.equal(formatDuration(90_000), '1m30s')
  t.equal(formatDuration(3_600_000), '1h0m0s')
})
