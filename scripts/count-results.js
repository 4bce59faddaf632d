#!/usr/bin/env node
// Reads a test run's output and prints "N passed, N failed": tap's own summary when it printed one,
// otherwise a single failure when the command itself failed before any test ran (a type error, say).
import { readFileSync } from 'node:fs'

const [file, rcText] = process.argv.slice(2)
const out = readFileSync(file, 'utf8').replace(/\x1b\[[0-9;]*m/g, '')
const rc = Number(rcText ?? '0')
let passed = 0
let failed = 0
let skipped = 0
// tap's base reporter ends with lines such as "# { total: 12, pass: 11, fail: 1, skip: 0 }"
// or with "ok/not ok" per file; prefer the per-assertion summary.
const summary = [...out.matchAll(/#\s*\{\s*total:\s*(\d+)(?:,\s*pass:\s*(\d+))?(?:,\s*fail:\s*(\d+))?(?:,\s*skip:\s*(\d+))?/g)].at(-1)
if (summary) {
  passed = Number(summary[2] ?? 0)
  failed = Number(summary[3] ?? 0)
  skipped = Number(summary[4] ?? 0)
} else {
  for (const m of out.matchAll(/^\s*(\d+) (passed|failed|skipped)\b/gm)) {
    if (m[2] === 'passed') passed = Number(m[1])
    if (m[2] === 'failed') failed = Number(m[1])
    if (m[2] === 'skipped') skipped = Number(m[1])
  }
}
if (rc !== 0 && failed === 0) failed = 1
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
process.exit(rc === 0 && failed === 0 ? 0 : 1)
