// Runs compiled test files as plain `node FILE` processes, `jobs` at a time, and joins what each prints
// (tap's own TAP, which every test file writes when run alone) into one stream shaped like tap's runner's:
// each file a subtest, a point per file, and the summary at the end. It skips the runner's per-file loaders
// (TypeScript, mocks, process info), which cost more than most unit tests take to run.
import { spawn } from 'node:child_process'
import { PassThrough } from 'node:stream'

/** A file's own summary line, `# { total: 12, pass: 11, fail: 1, skip: 0 }`, as numbers. */
export function fileSummary(text) {
  let found
  for (const m of text.matchAll(/^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?(?:, skip: (\d+))?/gm)) found = m
  if (found === undefined) return undefined
  return { total: +found[1], pass: +(found[2] ?? 0), fail: +(found[3] ?? 0), skip: +(found[4] ?? 0) }
}

/**
 * Starts the run; `stream` carries the joined TAP, `done` the exit code (0 only if every file passed).
 * A file's stderr goes to this process's. Each gets `timeoutMs` as TAP_TIMEOUT (tap's own timeout, as its runner
 * gives it); one still running 30 s past that is killed and fails.
 */
export function runDirect(files, { cwd, env, jobs = 2, timeoutMs = 300_000, node = process.execPath }) {
  const stream = new PassThrough()
  const totals = { total: 0, pass: 0, fail: 0, skip: 0 }
  let next = 0
  let point = 0
  let failed = false
  const one = (file) =>
    new Promise((resolve) => {
      const started = Date.now()
      // tap's runner hands its timeout (package.json's, in seconds) to each file the same way.
      const childEnv = { ...env, TAP_TIMEOUT: env.TAP_TIMEOUT ?? String(timeoutMs / 1000) }
      const child = spawn(node, ['--enable-source-maps', file], { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'inherit'] })
      let text = ''
      child.stdout.on('data', (c) => (text += c.toString()))
      // tap's own timeout reports first; this is for a file that hangs past it.
      const timer = setTimeout(() => {
        text += `\nnot ok - killed: still running ${timeoutMs / 1000 + 30} s after it started\n`
        child.kill('SIGKILL')
      }, timeoutMs + 30_000)
      child.on('close', (code, signal) => {
        clearTimeout(timer)
        const s = fileSummary(text) ?? { total: 1, pass: 0, fail: 1, skip: 0 }
        const ok = code === 0 && s.fail === 0
        if (!ok) failed = true
        for (const k of Object.keys(totals)) totals[k] += s[k]
        if (ok) totals.pass += 1
        else totals.fail += 1
        totals.total += 1
        const body = text.trimEnd().split('\n').map((l) => (l === '' ? '' : `    ${l}`))
        if (signal !== null || code !== 0) body.push(`    # exit ${code ?? signal}`)
        stream.write(`# Subtest: ${file}\n${body.join('\n')}\n${ok ? 'ok' : 'not ok'} ${++point} - ${file} # time=${Date.now() - started}ms\n\n`)
        resolve()
      })
    })
  const worker = async () => {
    while (next < files.length) await one(files[next++])
  }
  const done = Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, files.length)) }, worker)).then(() => {
    stream.end(`1..${files.length}\n# { total: ${totals.total}, pass: ${totals.pass}${totals.fail ? `, fail: ${totals.fail}` : ''}${totals.skip ? `, skip: ${totals.skip}` : ''} }\n`)
    return failed ? 1 : 0
  })
  return { stream, done }
}
