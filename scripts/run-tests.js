#!/usr/bin/env node
// Runs the suite with tap and shows a person what matters: one line per test file as it finishes, the
// failing assertions of a failed file with their diagnostics, every skip with its reason, and a last
// line with the counts. tap's full TAP stream goes to .tap/last-run.tap, for when more is needed.
// Arguments are tap's (a test file, say: `npm test -- dist/test/cni/plugin.test.js`); with --direct first,
// the files named run as plain node processes (direct-tap.js) instead of under tap's runner. A whole run builds
// the Kubernetes components in the background and runs the files that need them last.
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, createWriteStream, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { PassThrough } from 'node:stream'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'
import { ensureNode } from './node-lts.js'
import { runDirect } from './direct-tap.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const tap = join(root, 'node_modules', '.bin', 'tap')
const direct = process.argv[2] === '--direct'
const args = process.argv.slice(direct ? 3 : 2)
mkdirSync(join(root, '.tap'), { recursive: true })
const log = createWriteStream(join(root, '.tap', 'last-run.tap'))

/**
 * For a whole run where Go is present: the Kubernetes components the suite needs (and PINTO_PREBUILD_EXTRA's,
 * space-separated), built in the background at a low priority while the files that need none run, instead of
 * by the first file that needs each while its runner slot waits. Its output goes to .tap/kubernetes-build.log.
 */
async function startPrebuild() {
  const script = await import(join(root, 'scripts', 'kubernetes.js'))
  if (script.goAbsent() !== undefined) return undefined
  const extra = (process.env['PINTO_PREBUILD_EXTRA'] ?? '').split(/\s+/).filter((n) => n !== '')
  const names = [...script.SUITE_COMPONENTS, ...extra].filter((n) => !existsSync(join(script.BIN_DIR, n)))
  if (names.length === 0) return undefined
  const file = join(root, '.tap', 'kubernetes-build.log')
  const fd = openSync(file, 'w')
  const child = spawn(process.execPath, [join(root, 'scripts', 'kubernetes.js'), ...names], { cwd: root, stdio: ['ignore', 'ignore', fd] })
  closeSync(fd)
  const started = Date.now()
  out(`kubernetes: building ${names.join(', ')} in the background (${relative(root, file)})`)
  // Wrapped: an async function returning the promise itself would make its caller wait for the build.
  return { done: once(child, 'close').then(([code]) => out(`kubernetes: background build ${code === 0 ? 'done' : `failed (exit ${code}); see ${relative(root, file)}`} after ${Math.round((Date.now() - started) / 1000)} s`)) }
}

/** The test files of a whole run (tap's include glob, roughly). */
function testFiles(dir) {
  const found = []
  for (const e of readdirSync(dir)) {
    const p = join(dir, e)
    if (e === 'fixtures') continue
    if (statSync(p).isDirectory()) found.push(...testFiles(p))
    else if (e.endsWith('.test.js')) found.push(p)
  }
  return found
}

/**
 * Whether a compiled file imports, directly or through other files of dist/, the harness that has the Kubernetes
 * components built (test/harness/kubernetes-bin.js). Memoized; an import cycle counts as no.
 */
function needsKubernetes(file, memo = new Map()) {
  if (memo.has(file)) return memo.get(file)
  memo.set(file, false)
  let text
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return false
  }
  const needs = [...text.matchAll(/(?:from\s*|import\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].some(([, spec]) => {
    const target = join(dirname(file), spec)
    return target.endsWith(join('harness', 'kubernetes-bin.js')) || needsKubernetes(target, memo)
  })
  memo.set(file, needs)
  return needs
}

const explicit = args.filter((a) => a.endsWith('.js')).length
const whole = explicit === 0 && !direct
const allFiles = explicit > 0 ? [] : testFiles(join(root, 'dist', 'test'))
const total = explicit > 0 ? explicit : allFiles.length

const out = (s) => process.stdout.write(s + '\n')
// The suite runs under the Node.js pinto ships (tap, the tests and every process they start by
// process.execPath); PINTO_TEST_NODE=system keeps the one that runs this script.
const shipped = process.env['PINTO_TEST_NODE'] === 'system' ? undefined : ensureNode()
const env = shipped === undefined ? process.env : { ...process.env, PATH: `${dirname(shipped)}:${process.env['PATH'] ?? '/usr/bin:/bin'}` }
let source
let finished
if (direct) {
  const r = runDirect(args, { cwd: root, env, ...(shipped !== undefined ? { node: shipped } : {}) })
  source = r.stream
  finished = r.done
} else if (whole) {
  // tap runs its files in name order: the files that need the Kubernetes components go in a second run, so the
  // others run while those components build in the background, instead of two runner slots waiting on the build.
  const memo = new Map()
  const later = allFiles.filter((f) => needsKubernetes(f, memo))
  const first = allFiles.filter((f) => !later.includes(f))
  const stream = new PassThrough()
  source = stream
  finished = (async () => {
    let code = 0
    for (const files of [first, later]) {
      if (files.length === 0) continue
      const child = spawn(shipped ?? process.execPath, [tap, '--reporter=tap', ...args, ...files.map((f) => relative(root, f))], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] })
      child.stdout.pipe(stream, { end: false })
      const [c] = await once(child, 'close')
      code = Math.max(code, c ?? 1)
    }
    stream.end()
    return code
  })()
} else {
  const child = spawn(shipped ?? process.execPath, [tap, '--reporter=tap', ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] })
  source = child.stdout
  finished = once(child, 'close').then(([code]) => code)
}
const prebuild = whole ? await startPrebuild() : undefined
out(`tests under Node ${shipped === undefined ? process.version : execFileSync(shipped, ['--version'], { encoding: 'utf8' }).trim()}`)
let done = 0
let block = []
let summary
const skips = []
const failedFiles = []

/** The failing assertions of one file's block, each with its YAML diagnostics, at most `max` lines. */
function failures(lines, max = 80) {
  const shown = []
  for (let i = 0; i < lines.length && shown.length < max; i++) {
    if (!/^\s+not ok /.test(lines[i])) continue
    shown.push(lines[i])
    const indent = lines[i].search(/\S/)
    for (let j = i + 1; j < lines.length && shown.length < max; j++) {
      const l = lines[j]
      if (l.trim() === '...') break
      if (l.search(/\S/) <= indent && l.trim() !== '') break
      shown.push(l)
    }
  }
  return shown
}

const lines = createInterface({ input: source })
lines.on('line', (line) => {
  log.write(line + '\n')
  const top = /^(not )?ok \d+ - (\S+)(.*)$/.exec(line)
  if (top === null) {
    block.push(line)
    const skip = /^\s+ok \d+ - (.*?) # SKIP(.*)$/i.exec(line)
    if (skip !== null) skips.push(`${skip[1]}:${skip[2] || ' (no reason given)'}`)
    const note = /^\s*# (skipping .*)$/i.exec(line)
    if (note !== null) skips.push(note[1])
    const s = /^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?(?:, skip: (\d+))?/.exec(line)
    // A whole run is two tap runs, each with its summary: they add up.
    if (s !== null) summary = { total: (summary?.total ?? 0) + +s[1], pass: (summary?.pass ?? 0) + +(s[2] ?? 0), fail: (summary?.fail ?? 0) + +(s[3] ?? 0), skip: (summary?.skip ?? 0) + +(s[4] ?? 0) }
    return
  }
  done++
  const file = relative(root, join(root, top[2]))
  const time = /# time=([\d.]+)ms/.exec(top[3])
  const secs = time ? ` ${(Number(time[1]) / 1000).toFixed(1)} s` : ''
  out(`[${String(done).padStart(String(total).length)}/${total}] ${top[1] ? 'FAIL' : 'ok  '} ${file}${secs}`)
  if (top[1]) {
    failedFiles.push(file)
    for (const l of failures(block)) out(`    ${l}`)
  }
  block = []
})

Promise.all([finished, once(lines, 'close'), prebuild?.done]).then(([code]) => {
  log.end()
  if (skips.length > 0) out(`\nskipped:\n${[...new Set(skips)].map((s) => `  ${s}`).join('\n')}`)
  if (failedFiles.length > 0) out(`\nfailed files:\n${failedFiles.map((f) => `  ${f}`).join('\n')}`)
  const full = relative(process.cwd(), join(root, '.tap', 'last-run.tap'))
  out(`\nthe full TAP output: ${full.startsWith('..') ? join(root, '.tap', 'last-run.tap') : full}`)
  const s = summary ?? { pass: 0, fail: code === 0 ? 0 : 1, skip: 0 }
  const fail = code !== 0 && s.fail === 0 ? 1 : s.fail
  out(`${s.pass} passed, ${fail} failed${s.skip ? `, ${s.skip} skipped` : ''}`)
  process.exit(code ?? 1)
})
