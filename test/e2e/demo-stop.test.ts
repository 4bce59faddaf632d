// The demo removes what it made however it is stopped: Ctrl-C on `pintoctl demo | tee log` (SIGINT to the
// whole pipeline, the reader gone with it), the terminal closing (SIGHUP, no reader left), `kill` (SIGTERM),
// or the reader of its output quitting while it builds. Each run is checked for its namespaces, temp dir
// and agents, which must all be gone within a deadline.

import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { execa } from 'execa'
import { PINTOCTL_BIN } from '../../agent/demo/cluster.js'
import { isAlive, namespacePids, killQuietly } from '../../agent/demo/processes.js'
import { waitFor } from '../harness/wait.js'

interface Run {
  readonly child: ChildProcess
  readonly lines: string[]
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** The namespaces' prefix (pdm<pid>-<id>) and the temp dir's id, once the demo printed them. */
  prefix: string | undefined
  id: string | undefined
}

async function namespacesOf(prefix: string): Promise<string[]> {
  const r = await execa('ip', ['netns', 'list'], { reject: false })
  return String(r.stdout)
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(`${prefix}-`))
}

async function tempDirsOf(id: string): Promise<string[]> {
  return (await readdir(tmpdir())).filter((e) => e.startsWith(`pinto-demo-${id}-`))
}

/** The agents' pids from the demo's progress lines ("node1: pinto-node running (pid 123) at ..."). */
function agentPids(run: Run): number[] {
  return run.lines.flatMap((l) => /pinto-node running \(pid (\d+)\)/.exec(l)?.[1] ?? []).map(Number)
}

/** What the run left: namespaces, temp dirs, live agents. */
async function leftovers(run: Run): Promise<string[]> {
  if (run.prefix === undefined || run.id === undefined) throw new Error('the demo never named its namespaces')
  const agents = agentPids(run).filter(isAlive).map((p) => `agent pid ${p}`)
  return [...(await namespacesOf(run.prefix)), ...(await tempDirsOf(run.id)), ...agents]
}

/**
 * `pintoctl demo --nodes 2 --pods 1` in a process group of its own (as a shell runs a pipeline), its stdout
 * and stderr pipes read here. Whatever the test's outcome, the group is killed and its leftovers removed.
 */
function startDemo(t: Test): Run {
  const child = spawn(process.execPath, [PINTOCTL_BIN, 'demo', '--nodes', '2', '--pods', '1'], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const run: Run = { child, lines: [], exit, prefix: undefined, id: undefined }
  createInterface({ input: child.stdout }).on('line', (line) => {
    run.lines.push(line)
    const m = /namespaces (pdm\d+-([0-9a-f]{6}))-\*/.exec(line)
    if (m !== null) [run.prefix, run.id] = [m[1], m[2]]
  })
  child.stderr.on('data', (b: Buffer) => run.lines.push(`stderr: ${b.toString().trimEnd()}`))
  // A destroyed pipe's read end may still see an error from the other side; nobody reads it any more.
  child.stdout.on('error', () => undefined)
  child.stderr.on('error', () => undefined)
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) killQuietly(-child.pid!, 'SIGKILL')
    await exit
    if (run.prefix !== undefined) {
      for (const ns of await namespacesOf(run.prefix)) {
        for (const pid of await namespacePids(ns)) killQuietly(pid, 'SIGKILL')
        await execa('ip', ['netns', 'del', ns], { reject: false })
      }
    }
    for (const pid of agentPids(run)) killQuietly(pid, 'SIGKILL')
    if (run.id !== undefined) for (const d of await tempDirsOf(run.id)) await rm(join(tmpdir(), d), { recursive: true, force: true })
  })
  return run
}

async function waitForLine(run: Run, re: RegExp, timeoutMs = 120_000): Promise<void> {
  await waitFor(() => run.lines.some((l) => re.test(l)) || (run.child.exitCode !== null ? Promise.reject(new Error(`the demo exited (${run.child.exitCode}):\n${run.lines.join('\n')}`)) : false), { timeoutMs, what: `the demo to print ${re}` })
}

/** Waits until the demo exited and nothing it made is left; fails naming what stayed. */
async function expectGone(t: Test, run: Run, timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const exited = await Promise.race([run.exit, new Promise<undefined>((r) => setTimeout(() => r(undefined), timeoutMs).unref())])
  t.ok(exited, 'the demo exited')
  let left: string[] = []
  try {
    await waitFor(async () => (left = await leftovers(run)).length === 0, { timeoutMs: exited ? 10_000 : 1, what: 'the demo to remove what it made' })
  } catch {
    // reported below
  }
  t.same(left, [], 'no namespace, temp dir or agent left behind')
  return exited ?? { code: null, signal: null }
}

t.test('Ctrl-C on `pintoctl demo | tee log`: SIGINT to the group, the reader gone with it', async (t) => {
  const run = startDemo(t)
  await waitForLine(run, /^running; press Ctrl-C/)
  run.child.stdout!.destroy()
  process.kill(-run.child.pid!, 'SIGINT')
  const r = await expectGone(t, run)
  t.equal(r.signal, null, `it ended by itself, not by a signal\n${run.lines.join('\n')}`)
})

t.test('the terminal closes: SIGHUP to the group, stdout and stderr gone', async (t) => {
  const run = startDemo(t)
  await waitForLine(run, /^running; press Ctrl-C/)
  run.child.stdout!.destroy()
  run.child.stderr!.destroy()
  process.kill(-run.child.pid!, 'SIGHUP')
  const r = await expectGone(t, run)
  t.equal(r.signal, null, 'it ended by itself, not by SIGHUP')
})

t.test('kill PID: SIGTERM to the demo alone', async (t) => {
  const run = startDemo(t)
  await waitForLine(run, /^running; press Ctrl-C/)
  run.child.kill('SIGTERM')
  await expectGone(t, run)
  t.ok(run.lines.includes('removed the demo cluster: namespaces, processes and temporary files'), 'it says so')
})

t.test('the reader of its output quits while it builds (`pintoctl demo | head -2`)', async (t) => {
  const run = startDemo(t)
  await waitForLine(run, /namespaces pdm\d+-/)
  run.child.stdout!.destroy()
  const r = await expectGone(t, run)
  t.equal(r.code, 141, 'exit status 141, as a shell shows for SIGPIPE')
})
