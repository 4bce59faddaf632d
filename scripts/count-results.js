#!/usr/bin/env node
// Reads a test run's output and prints "N passed, N failed": tap's own summary when it printed one,
// otherwise a single failure when the command itself failed before any test ran (a type error, say). Given a
// second output and status, those of `scripts/conformance.js`, it adds the conformance tests' counts.
import { readFileSync } from 'node:fs'

const [file, rcText, conformanceFile, conformanceRcText] = process.argv.slice(2)
// eslint-disable-next-line no-control-regex -- the ESC of the colour codes it strips
const out = readFileSync(file, 'utf8').replace(/\x1b\[[0-9;]*m/g, '')
const rc = Number(rcText ?? '0')
let passed = 0
let failed = 0
let skipped = 0
// tap's TAP reporter ends with lines such as "# { total: 12, pass: 11, fail: 1, skip: 0 }"
// or with "ok/not ok" per file; prefer the per-assertion summary.
const summary = [...out.matchAll(/#\s*\{\s*total:\s*(\d+)(?:,\s*pass:\s*(\d+))?(?:,\s*fail:\s*(\d+))?(?:,\s*skip:\s*(\d+))?/g)].at(-1)
if (summary) {
  passed = Number(summary[2] ?? 0)
  failed = Number(summary[3] ?? 0)
  skipped = Number(summary[4] ?? 0)
} else {
  // scripts/run-tests.js ends with "N passed, N failed[, N skipped]".
  const line = [...out.matchAll(/^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$/gm)].at(-1)
  if (line) {
    passed = Number(line[1])
    failed = Number(line[2])
    skipped = Number(line[3] ?? 0)
  }
}
if (rc !== 0 && failed === 0) failed = 1
let ok = rc === 0 && failed === 0
if (conformanceFile !== undefined) {
  // eslint-disable-next-line no-control-regex -- as above
  const text = readFileSync(conformanceFile, 'utf8').replace(/\x1b\[[0-9;]*m/g, '')
  const line = [...text.matchAll(/^conformance: (\d+) passed, (\d+) failed, (\d+) skipped$/gm)].at(-1)
  const crc = Number(conformanceRcText ?? '0')
  const [p, f, s] = line === undefined ? [0, 1, 0] : [Number(line[1]), Number(line[2]), Number(line[3])]
  passed += p
  failed += crc !== 0 && f === 0 ? 1 : f
  skipped += s
  ok &&= crc === 0 && f === 0
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
process.exit(ok ? 0 : 1)
