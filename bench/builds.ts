// bench/builds: the product benches run from two builds in one run, their key figures side by side. The
// base build is made from a git revision in a temporary worktree (removed at the end, on failure and on
// Ctrl-C too); the current build is this checkout's dist/. Each named bench runs from each build in turn
// (base, current, base, current, ...) so drift and the machine's load fall on both.
// Both builds run the bench harness of this checkout (its bench/ sources are copied into the base worktree
// before it is compiled): what differs is the product code (and what the benches import from test/ and
// agent/demo), each build's own. A bench file that does not compile against the base is replaced by the
// base's own version of it, and named in the output; a bench whose base version then writes no --json file
// has its figures read from its printed report (bench/builds-report).
// Run (root): npx tsc -p . && node dist/bench/builds.js --base REV [--benches node-path,reflect,ipam-scale]
//   [--rounds 2] [--node-path-args '...'] [--reflect-args '...'] [--ipam-scale-args '...'] [bench args ...]
// Bench args after the script's own options go to every bench (each ignores the options it does not know).

import { spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BENCHES, type BenchName, type Run, compareTable, figuresFromPrinted, runsTable } from './builds-report.js'
import type { FiguresFile } from './json-figures.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')

interface Options {
  readonly base: string
  readonly benches: readonly BenchName[]
  readonly rounds: number
  /** Per bench, its own args (--<bench>-args), after the args for every bench. */
  readonly perBench: ReadonlyMap<BenchName, readonly string[]>
  readonly common: readonly string[]
}

function parseOptions(argv: readonly string[]): Options {
  let base: string | undefined
  let benches: BenchName[] = [...BENCHES]
  let rounds = 2
  const perBench = new Map<BenchName, string[]>()
  const common: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const value = (): string => {
      const v = argv[++i]
      if (v === undefined) throw new Error(`${a}: expected a value`)
      return v
    }
    if (a === '--base') base = value()
    else if (a === '--rounds') {
      const v = value()
      rounds = Number(v)
      if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: expected a whole number of at least 1, got ${JSON.stringify(v)}`)
    } else if (a === '--benches') {
      const v = value()
      const names = v.split(',').filter((n) => n !== '')
      const unknown = names.filter((n) => !(BENCHES as readonly string[]).includes(n))
      if (names.length === 0 || unknown.length > 0) throw new Error(`--benches: expected some of ${BENCHES.join(',')}, got ${JSON.stringify(v)}`)
      benches = names as BenchName[]
    } else if (BENCHES.some((b) => a === `--${b}-args`)) {
      perBench.set(a.slice(2, -'-args'.length) as BenchName, value().split(' ').filter((x) => x !== ''))
    } else if (a === '--json') throw new Error('--json: bench/builds gives each bench its own --json file; it takes none itself')
    else common.push(a)
  }
  if (base === undefined) throw new Error('--base: expected the git revision to compare against (e.g. --base ab206d7~1)')
  return { base, benches, rounds, perBench, common }
}

/** A process's run, its stdout kept and also passed on; in its own process group, so a signal reaches it once, from us. */
function runProcess(cmd: string, args: readonly string[], cwd: string, echo: boolean): { child: ChildProcess; done: Promise<{ code: number | null; out: string }> } {
  const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let out = ''
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString()
    if (echo) process.stdout.write(d)
  })
  child.stderr.on('data', (d: Buffer) => {
    if (echo) process.stderr.write(d)
    else out += d.toString()
  })
  const done = new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, out }))
  })
  return { child, done }
}

let running: ChildProcess | undefined
let stopping: string | undefined

/** A bench or tsc run: not started once a signal came; the signal is passed on to it while it runs. */
async function run(cmd: string, args: readonly string[], cwd: string, echo = false): Promise<{ code: number | null; out: string }> {
  if (stopping !== undefined) throw new Error(`stopped by ${stopping}`)
  const p = runProcess(cmd, args, cwd, echo)
  running = p.child
  try {
    return await p.done
  } finally {
    running = undefined
  }
}

/** git runs to its end even after a signal: removing the base worktree is one of its calls. */
async function git(args: readonly string[], cwd = ROOT): Promise<string> {
  const r = await runProcess('git', args, cwd, false).done
  if (r.code !== 0) throw new Error(`git ${args.join(' ')}: exit ${r.code}: ${r.out.trim()}`)
  return r.out.trim()
}

/** A tsc error line, `path(line,col): error TSnnnn: text`, its path relative to the compiled tree. */
interface TscError {
  readonly file: string
  readonly text: string
}

function tscErrors(out: string): TscError[] {
  return out.split('\n').flatMap((line) => {
    const m = /^(\S+?)\(\d+,\d+\): error (TS\d+: .*)$/.exec(line)
    return m === null ? [] : [{ file: m[1]!, text: line }]
  })
}

/** The tsconfig for the base build: the base's own, less its tests (the benches pull in the test helpers they import). */
function baseTsconfig(tree: string): string {
  const own = join(tree, 'tsconfig.json')
  let include: unknown
  try {
    include = (JSON.parse(readFileSync(own, 'utf8')) as { include?: unknown }).include
  } catch {
    return own
  }
  if (!Array.isArray(include) || !include.every((d): d is string => typeof d === 'string')) return own
  const path = join(tree, 'tsconfig.builds.json')
  const folders = [...new Set([...include.filter((d) => d !== 'test'), 'bench'])]
  writeFileSync(path, JSON.stringify({ extends: './tsconfig.json', include: folders, compilerOptions: { incremental: true, tsBuildInfoFile: './.tsbuildinfo-builds' } }, null, 2))
  return path
}

interface BaseBuild {
  readonly tree: string
  /** Bench files compiled from the base's own version, each with the errors the current one had against the base. */
  /** `left out`: a bench file the base has no version of and cannot compile, removed from the base's tree. */
  readonly kept: readonly { readonly file: string; readonly errors: readonly string[]; readonly leftOut: boolean }[]
}

/** Checks out `rev` at `tree`, puts this checkout's bench/ sources in it and compiles it. */
async function makeBase(rev: string, tree: string): Promise<BaseBuild> {
  await git(['worktree', 'add', '--detach', tree, rev])
  for (const dir of ['node_modules', '.cache']) {
    if (existsSync(join(ROOT, dir)) && !existsSync(join(tree, dir))) symlinkSync(realpathSync(join(ROOT, dir)), join(tree, dir))
  }
  for (const f of readdirSync(join(ROOT, 'bench'))) if (f.endsWith('.ts')) copyFileSync(join(ROOT, 'bench', f), join(tree, 'bench', f))
  const config = baseTsconfig(tree)
  const kept: { file: string; errors: string[]; leftOut: boolean }[] = []
  for (;;) {
    process.stdout.write(`base: compiling ${tree} (tsc -p ${config.slice(tree.length + 1)})${kept.length > 0 ? `, with the base's own ${kept.filter((k) => !k.leftOut).map((k) => k.file).join(', ') || 'none'}, without ${kept.filter((k) => k.leftOut).map((k) => k.file).join(', ') || 'none'}` : ''} ...\n`)
    const r = await run(process.execPath, [TSC, '-p', config], tree)
    const errors = tscErrors(r.out)
    if (r.code === 0 && errors.length === 0) return { tree, kept }
    if (errors.length === 0) throw new Error(`base: tsc exited ${r.code}: ${r.out.slice(-3000)}`)
    const outside = errors.filter((e) => !e.file.startsWith('bench/'))
    if (outside.length > 0) throw new Error(`base: ${rev} does not compile outside bench/:\n${outside.map((e) => e.text).join('\n')}`)
    const files = [...new Set(errors.map((e) => e.file))]
    for (const file of files) {
      const hasOwn = (await runProcess('git', ['cat-file', '-e', `HEAD:${file}`], tree, false).done).code === 0
      const fileErrors = errors.filter((e) => e.file === file).map((e) => e.text)
      if (kept.some((k) => k.file === file)) throw new Error(`base: neither this checkout's ${file} nor the base's own compiles against ${rev}:\n${fileErrors.join('\n')}`)
      if (hasOwn) await git(['checkout', 'HEAD', '--', file], tree)
      // A file the base has none of (a bench module added since) is left out; what imports it then falls back in turn.
      else rmSync(join(tree, file))
      kept.push({ file, errors: fileErrors, leftOut: !hasOwn })
    }
  }
}

async function runBench(bench: BenchName, build: Run['build'], round: number, root: string, opts: Options, tmp: string): Promise<Run> {
  const json = join(tmp, `${bench}-${build}-${round}.json`)
  const args = [...opts.common, ...(opts.perBench.get(bench) ?? []), '--json', json]
  const loadStart = loadavg()[0]!
  process.stdout.write(`\n== ${bench}, ${build} build, round ${round}/${opts.rounds} (load average ${loadStart.toFixed(2)}): node dist/bench/${bench}.js ${args.join(' ')}\n`)
  const t0 = performance.now()
  const r = await run(process.execPath, [join(root, 'dist', 'bench', `${bench}.js`), ...args], root, true)
  const seconds = (performance.now() - t0) / 1000
  let source: Run['source']
  let figures: Run['figures']
  if (existsSync(json)) {
    figures = (JSON.parse(readFileSync(json, 'utf8')) as FiguresFile).figures
    source = 'json'
  } else {
    figures = figuresFromPrinted(bench, r.out)
    source = figures.length > 0 ? 'printed' : 'none'
  }
  return { bench, build, round, source, exit: r.code, seconds, loadStart, loadEnd: loadavg()[0]!, figures }
}

async function main(): Promise<number> {
  const opts = parseOptions(process.argv.slice(2))
  for (const b of opts.benches) if (!existsSync(join(ROOT, 'dist', 'bench', `${b}.js`))) throw new Error(`current: dist/bench/${b}.js is missing; build this checkout first (npx tsc -p .)`)
  const baseRev = await git(['rev-parse', '--verify', `${opts.base}^{commit}`])
  const baseName = await git(['log', '-1', '--format=%h %s', baseRev])
  const head = await git(['log', '-1', '--format=%h %s', 'HEAD'])
  const dirty = (await git(['status', '--porcelain', '--untracked-files=no'])) !== ''
  const tmp = mkdtempSync(join(tmpdir(), 'pinto-builds-'))
  const tree = join(tmp, 'base')
  const runs: Run[] = []
  let base: BaseBuild | undefined
  try {
    base = await makeBase(baseRev, tree)
    for (const bench of opts.benches) {
      for (let round = 1; round <= opts.rounds; round++) {
        for (const [build, root] of [['base', tree], ['current', ROOT]] as const) {
          if (stopping !== undefined) break
          runs.push(await runBench(bench, build, round, root, opts, tmp))
        }
      }
    }
  } catch (err) {
    if (stopping === undefined) throw err
  } finally {
    if (existsSync(tree)) await git(['worktree', 'remove', '--force', tree]).catch((err: unknown) => process.stderr.write(`removing the base worktree ${tree}: ${String(err)}\n`))
    rmSync(tmp, { recursive: true, force: true })
  }
  if (stopping !== undefined) process.stdout.write(`\nstopped by ${stopping}; the base worktree is removed\n`)
  if (runs.length === 0) return stopping !== undefined ? 130 : 1

  process.stdout.write(`\n${'='.repeat(100)}\nTwo builds side by side (bench/builds), ${new Date().toISOString()}\n`)
  process.stdout.write(`base:    ${baseName} (built in a temporary worktree)\n`)
  process.stdout.write(`current: ${head}${dirty ? ' with uncommitted changes' : ''} (this checkout's dist/)\n`)
  process.stdout.write(`bench harness: this checkout's bench/ in both builds; the product code, and what the benches import from test/ and agent/demo, each build's own\n`)
  for (const k of base?.kept ?? []) process.stdout.write(`${k.leftOut ? `${k.file} left out of the base's build (the base has none of it)` : `base's own ${k.file} used instead of this checkout's`}, as it does not compile against the base:\n  ${k.errors.join('\n  ')}\n`)
  process.stdout.write(`args: ${[...opts.common, ...[...opts.perBench].map(([b, a]) => `--${b}-args '${a.join(' ')}'`)].join(' ') || '(the benches\' defaults)'}; ${opts.rounds} round${opts.rounds === 1 ? '' : 's'}\n`)
  for (const bench of opts.benches) {
    const mine = runs.filter((r) => r.bench === bench)
    if (mine.length === 0) continue
    process.stdout.write(`\n${bench}\n${compareTable(mine)}`)
  }
  process.stdout.write(`\nruns: overlap = the two builds' runs overlap (the difference is within run-to-run noise); an anchor (BIRD 2, etcd alone) is the same program in both builds\n`)
  process.stdout.write(`\nRuns in order (load average: 1 minute, machine with ${cpus().length} cores)\n${runsTable(runs)}`)
  const failed = runs.filter((r) => r.exit !== 0)
  if (failed.length > 0) process.stdout.write(`${failed.length} run${failed.length === 1 ? '' : 's'} did not exit 0: ${failed.map((r) => `${r.bench} ${r.build} round ${r.round}`).join(', ')}\n`)
  return stopping !== undefined ? 130 : failed.length > 0 ? 1 : 0
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    if (stopping !== undefined) return
    stopping = sig
    process.stderr.write(`\nbench/builds: ${sig}: stopping the running bench, then removing the base worktree\n`)
    running?.kill('SIGINT')
  })
}

try {
  process.exitCode = await main()
} catch (err) {
  process.stderr.write(`bench/builds: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
}
