// Every program and subcommand answers -h/--help (and the programs --version) with its usage and exit 0,
// touching nothing: no file or socket appears where its settings point, none in its working directory or
// pinto's default directories, and no process outlives it. An unknown command says so and lists the commands.

import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pintoFootprint } from '../harness/host-paths.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const PROGRAMS: Record<string, string> = {
  'pinto-node': join(root, 'bin', 'pinto-node.js'),
  pintoctl: join(root, 'bin', 'pintoctl.js'),
  'pinto-fanout': join(root, 'bin', 'pinto-fanout.js'),
  pinto: join(root, 'dist', 'bundle', 'pinto.cjs'),
  'pinto-ipam': join(root, 'dist', 'bundle', 'pinto-ipam.cjs'),
}

const CASES: readonly [string, readonly string[]][] = [
  ['pinto-node', ['--help']], ['pinto-node', ['-h']], ['pinto-node', ['--version']],
  ['pintoctl', ['--help']], ['pintoctl', ['-h']], ['pintoctl', ['--version']],
  ['pinto-fanout', ['--help']], ['pinto-fanout', ['-h']], ['pinto-fanout', ['--version']],
  ...['bgp decode', 'ipam show', 'ipam check', 'ipam check --repair', 'ipam release', 'node status', 'routes', 'apply', 'get ippools', 'delete ippool x', 'demo', 'install-cni']
    .flatMap((c): [string, string[]][] => [['pintoctl', [...c.split(' '), '--help']], ['pintoctl', [...c.split(' '), '-h']]]),
  ['pinto', ['--help']], ['pinto-ipam', ['--help']], ['pinto', ['--version']],
]

interface Ran { code: number | null; stdout: string; stderr: string; pid: number }

/** Runs a program in its own process group, so anything it left running can be found by the group. */
function run(program: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PROGRAMS[program] as string, ...args], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr, pid: child.pid as number }))
  })
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

const listing = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir).sort() : ['(absent)'])

t.test('--help, -h and --version print, exit 0 and touch nothing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-help-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const cwd = join(dir, 'cwd')
  const state = join(dir, 'state')
  mkdirSync(cwd)
  const env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: cwd,
    PINTO_DATASTORE: join(state, 'store'),
    PINTO_SOCKET: join(state, 'run', 'pinto.sock'),
    PINTO_API_SOCKET: join(state, 'run', 'api.sock'),
    PINTO_STATE_DIR: join(state, 'lib'),
    PINTO_MTU_FILE: join(state, 'lib', 'mtu'),
    // Nothing answers here: a command that tried to reach the agent would fail, not pass.
    PINTO_API: 'http://127.0.0.1:9',
    PINTO_API_LISTEN: '127.0.0.1:0',
    PINTO_BGP_PORT: '0',
  }
  // The machine's defaults, in which only what pinto could have made is compared (podman, say, may
  // change /etc/cni/net.d meanwhile).
  const before = await pintoFootprint()
  for (const [program, args] of CASES) {
    const r = await run(program, args, cwd, env)
    const what = `${program} ${args.join(' ')}`
    t.equal(r.code, 0, `${what}: exit 0${r.code === 0 ? '' : ` (stderr: ${r.stderr.trim()})`}`)
    t.match(r.stdout, args.includes('--version') ? /\d+\.\d+\.\d+|spec/ : /usage|CNI_COMMAND/, `${what}: prints its usage`)
    t.notOk(groupAlive(r.pid), `${what}: leaves no process running`)
    t.same(listing(cwd), [], `${what}: nothing made in its working directory`)
    t.notOk(existsSync(state), `${what}: nothing made where its settings point`)
  }
  t.same(await pintoFootprint(), before, "pinto's default paths are as they were")
})

t.test('an unknown command says so and lists the commands', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-help-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const r = await run('pintoctl', ['ipaam', 'show'], dir, { PATH: process.env['PATH'] ?? '/usr/bin:/bin' })
  t.equal(r.code, 2, 'exit 2')
  t.match(r.stderr, /unknown command "ipaam"/, 'names the command')
  t.match(r.stderr, /commands:[\s\S]*ipam show/, 'lists the commands')
  const n = await run('pinto-node', ['start'], dir, { PATH: process.env['PATH'] ?? '/usr/bin:/bin' })
  t.equal(n.code, 2, 'pinto-node with an argument: exit 2, nothing started')
  t.match(n.stderr, /unexpected argument "start"/, 'pinto-node names the argument')
  const f = await run('pinto-fanout', ['serve'], dir, { PATH: process.env['PATH'] ?? '/usr/bin:/bin' })
  t.equal(f.code, 2, 'pinto-fanout with an argument: exit 2, nothing started')
  t.match(f.stderr, /unexpected argument "serve"/, 'pinto-fanout names the argument')
})
