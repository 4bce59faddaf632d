// bench/builds' reading of a bench's printed report, for a build whose bench writes no --json file: from
// real reports of node-path, reflect and ipam-scale (test/fixtures/bench-printed, each beside the --json
// file the same run wrote), it must find every figure --json holds, under the same name, equal at the
// report's print precision. Then the side-by-side table: the medians' ratio and whether the runs overlap.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { BENCHES, type Run, compareTable, figuresFromPrinted, verdict } from '../../bench/builds-report.js'
import type { Figure } from '../../bench/json-figures.js'

const dir = fileURLToPath(new URL('../../../test/fixtures/bench-printed/', import.meta.url))

for (const bench of BENCHES) {
  t.test(`${bench}: the printed report holds what --json wrote`, async (t) => {
    const json = JSON.parse(readFileSync(`${dir}${bench}.json`, 'utf8')) as Figure[]
    const printed = figuresFromPrinted(bench, readFileSync(`${dir}${bench}.txt`, 'utf8'))
    t.same(printed.map((f) => f.name).sort(), json.map((f) => f.name).sort(), 'the same figures')
    for (const j of json) {
      const p = printed.find((f) => f.name === j.name)
      t.equal(p?.unit, j.unit, `${j.name}: unit`)
      t.equal(p?.anchor === true, j.anchor === true, `${j.name}: anchor or not`)
      const v = p?.value
      t.ok(typeof v === 'number' && j.value !== null && Math.abs(v - j.value) <= Math.max(0.051, Math.abs(j.value) * 0.025), `${j.name}: ${v} printed, ${j.value} in the JSON`)
    }
  })
}

t.test('node-path without BIRD: pinto-node\'s table time and VmHWM from its progress line, no churn', async (t) => {
  const f = figuresFromPrinted('node-path', 'ipv6 100000: pinto-node ... 1.94 s (CPU 2.10 s), 141.3 MB, churn 100 changes; BIRD not run (load average 2.1)\n')
  t.same(f, [
    { name: 'ipv6 100000 pinto-node: table in', value: 1.94, unit: 's' },
    { name: 'ipv6 100000 pinto-node: VmHWM', value: 141.3, unit: 'MB' },
  ])
})

t.test('reflect: a cold start that did not finish has no time', async (t) => {
  const f = figuresFromPrinted('reflect', '| pinto: cold start (did not finish) | 80 of 100 sessions Established after 120 s (3 connections retried) |\n| pinto: rr1 VmHWM, CPU (utime+stime) at the deadline | 90.5 MB, 2.0 s |\n')
  t.same(f, [
    { name: 'pinto: cold start, every client holds every route', value: null, unit: 's' },
    { name: 'pinto: reflector VmHWM (the larger)', value: 90.5, unit: 'MB' },
  ])
})

t.test('ipam-scale: a check that failed has no time', async (t) => {
  const f = figuresFromPrinted('ipam-scale', 'pintoctl ipam check --nodes=<all 5>: 0.4 s (target < 30 s), exit 1: Error: no datastore\n')
  t.same(f, [{ name: 'pintoctl ipam check', value: null, unit: 's' }])
})

t.test('verdict: overlap when the runs of the two builds overlap, else which is lower', async (t) => {
  t.equal(verdict([10, 12], [11, 13]), 'overlap')
  t.equal(verdict([10, 12], [12, 14]), 'overlap', 'touching ranges overlap')
  t.equal(verdict([10, 12], [13, 14]), 'current higher')
  t.equal(verdict([10, 12], [8, 9]), 'current lower')
  t.equal(verdict([10], [20]), '-', 'one run each tells nothing of the noise')
})

t.test('compareTable: each run of each build, the medians\' ratio, anchors last', async (t) => {
  const run = (build: Run['build'], round: number, pinto: number, bird: number): Run => ({
    bench: 'node-path', build, round, source: 'json', exit: 0, seconds: 30, loadStart: 1, loadEnd: 1,
    figures: [{ name: 'ipv4 10000 BIRD 2: table in', value: bird, unit: 's', anchor: true }, { name: 'ipv4 10000 pinto-node: table in', value: pinto, unit: 's' }],
  })
  const text = compareTable([run('base', 1, 2, 0.3), run('current', 1, 3, 0.35), run('base', 2, 2.2, 0.4), run('current', 2, 3.2, 0.3)])
  const rows = text.split('\n').filter((l) => l.startsWith('| ipv4'))
  t.equal(rows.length, 2)
  t.match(rows[0], /^\| ipv4 10000 pinto-node: table in +\| s +\| 2\.00 \/ 2\.20 +\| 3\.00 \/ 3\.20 +\| 1\.48x +\| current higher +\|$/)
  t.match(rows[1], /^\| ipv4 10000 BIRD 2: table in \(anchor\) +\| s +\| 0\.30 \/ 0\.40 +\| 0\.35 \/ 0\.30 +\| 0\.93x +\| overlap +\|$/)
})
