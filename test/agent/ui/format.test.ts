// The status page's wording: durations, ages, state colours, block use, next hops.

import t from 'tap'
import { clockTime, formatDuration, formatNextHops, since, stateTone, usePercent } from '../../../agent/ui/format.js'

t.test('durations show the two largest units', async (t) => {
  t.equal(formatDuration(0), '0s')
  t.equal(formatDuration(42.9), '42s')
  t.equal(formatDuration(5 * 60 + 3), '5m 03s')
  t.equal(formatDuration(2 * 3600 + 5 * 60 + 59), '2h 05m')
  t.equal(formatDuration(3 * 86400 + 4 * 3600), '3d 04h')
  t.equal(formatDuration(-5), '0s', 'a clock step backwards is not a negative age')
})

t.test('since and clockTime read ISO times; garbage shows as such', async (t) => {
  t.equal(since('2026-01-01T00:00:00.000Z', Date.parse('2026-01-01T00:01:30Z')), '1m 30s')
  t.equal(since('not a time', 0), '—')
  t.equal(clockTime('2026-01-01T13:04:05.678Z'), '13:04:05')
  t.equal(clockTime('soon'), 'soon')
})

t.test('state tones', async (t) => {
  t.equal(stateTone('Established'), 'up')
  for (const s of ['Connect', 'OpenSent', 'OpenConfirm']) t.equal(stateTone(s), 'connecting', s)
  for (const s of ['Idle', 'Active', 'Whatever']) t.equal(stateTone(s), 'down', s)
})

t.test('block use rounds down so only a full block is 100', async (t) => {
  t.equal(usePercent(0, 64), 0)
  t.equal(usePercent(63, 64), 98)
  t.equal(usePercent(64, 64), 100)
  t.equal(usePercent(1, 0), 0)
})

t.test('next hops read like ip route', async (t) => {
  t.equal(formatNextHops([]), '—')
  t.equal(formatNextHops([{ gateway: '192.0.2.12', dev: 'eth0', onlink: true }]), 'via 192.0.2.12 dev eth0 onlink')
  t.equal(formatNextHops([{ gateway: '192.0.2.12' }, { gateway: '192.0.2.13', onlink: false }]), 'via 192.0.2.12, via 192.0.2.13')
})
