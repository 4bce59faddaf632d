// The crash points of a pod's ADD and DEL, each hit with a real agent over a real etcd, and the end state
// once the agent is back (without the runtime asking again): no veth, no address, no handle, no open
// journal record left of what failed, and the runtime's retry then gets one address, the only one held.
// - a CNI channel ADD, the agent killed after its IPAM assign and before any wiring;
// - a CNI channel ADD, the agent killed after the wiring and before the answer;
// - the plugin's own ADD over the socket, the agent killed while its assign is out (the plugin owes the
//   release);
// - a DEL, the agent killed after the release is recorded and before the datastore write;
// - a DEL while the datastore is down: released once it is back.
// Where an `ip` of the agent's is to stop, the agent's PATH leads to a wrapper that holds that `ip` (pod
// side before its first line, or host side after its last) until the test kills it with the agent; that
// agent wires through `ip` (PINTO_CNI_WIRING=ip), the others through rtnetlink. Where
// the agent's writes are not to reach etcd, nftables in the lab's host namespace drops its packets to etcd,
// and the dead agent's connections are destroyed (ss -K) before the rule goes: a killed process's unsent
// bytes would otherwise still reach etcd.

import t, { type Test } from 'tap'
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { execa, execaSync } from 'execa'
import { openDatastore } from '../../../config/datastore-open.js'
import type { Datastore } from '../../../config/index.js'
import { JOURNAL_FILE, type PendingRecord, openRecords, parseJournal } from '../../../agent/recovery/index.js'
import { spoolDir } from '../../../cni/release-spool.js'
import { handleOf } from '../../../cni/config.js'
import { checkIpam, describeProblem } from '../../../ipam/check.js'
import { Ipam } from '../../../ipam/ipam.js'
import { HANDLES_PREFIX } from '../../../ipam/records.js'
import { type Lab, type PluginRun, pintoConf } from '../../cni/lab.js'
import type { EtcdInstance } from '../../harness/etcd.js'
import { waitFor } from '../../harness/wait.js'
import { type AgentProcess, etcdLab, startAgent } from '../agent-proc.js'

const REAL_IP = execaSync('sh', ['-c', 'command -v ip']).stdout.trim()

type Hold = 'pod-start' | 'host-end'

/**
 * A directory holding an `ip` that runs the real one, except that while `<dir>/hold-<kind>` exists it
 * holds a batch run: the pod side's (`ip -n NS -batch -`) before it reads a line, or the host side's
 * (`ip -batch -`) after it applied its batch. A held wrapper writes its pid to `<dir>/held.<pid>` and
 * waits on a FIFO nobody writes.
 */
function ipWrapper(dir: string): string {
  mkdirSync(dir, { recursive: true })
  execaSync('mkfifo', [join(dir, 'gate')])
  const script = `#!/bin/sh
ctl='${dir}'
case "$1 $2 $3 $4" in
  "-n "*" -batch -")
    if [ -e "$ctl/hold-pod-start" ]; then echo $$ > "$ctl/held.$$"; read _ < "$ctl/gate"; fi
    exec '${REAL_IP}' "$@" ;;
  "-batch - "*)
    if [ -e "$ctl/hold-host-end" ]; then '${REAL_IP}' "$@"; rc=$?; echo $$ > "$ctl/held.$$"; read _ < "$ctl/gate"; exit $rc; fi
    exec '${REAL_IP}' "$@" ;;
esac
exec '${REAL_IP}' "$@"
`
  writeFileSync(join(dir, 'ip'), script)
  chmodSync(join(dir, 'ip'), 0o755)
  return dir
}

interface Bench {
  readonly lab: Lab
  readonly etcd: EtcdInstance
  readonly store: Datastore
  readonly env: Record<string, string>
  readonly holdDir: string
}

async function bench(t: Test): Promise<Bench> {
  const { etcd, spec, lab, env } = await etcdLab(t)
  const store = await openDatastore(spec)
  t.teardown(() => store.close())
  const holdDir = ipWrapper(join(lab.dir, 'hold'))
  t.teardown(() => killHeld(holdDir))
  return { lab, etcd, store, env, holdDir }
}

/** Starts the agent; with `hold`, its `ip` is the wrapper, holding that kind of run. */
function agent(t: Test, b: Bench, hold?: Hold): Promise<AgentProcess> {
  for (const k of ['pod-start', 'host-end']) rmSync(join(b.holdDir, `hold-${k}`), { force: true })
  if (hold === undefined) return startAgent(t, b.lab, b.env)
  writeFileSync(join(b.holdDir, `hold-${hold}`), '')
  return startAgent(t, b.lab, { ...b.env, PINTO_CNI_WIRING: 'ip', PATH: `${b.holdDir}:${process.env['PATH'] ?? ''}` })
}

const held = (dir: string): string[] => readdirSync(dir).filter((n) => n.startsWith('held.'))

/** Kills the held wrappers: released instead, one would run the dead agent's batch into the kernel. */
function killHeld(dir: string): void {
  for (const n of held(dir)) {
    try {
      process.kill(Number(n.slice('held.'.length)), 'SIGKILL')
    } catch {
      // gone already
    }
    rmSync(join(dir, n), { force: true })
  }
}

/**
 * Runs `plugin` with the agent's packets to etcd dropped, and kills the agent once `reached` holds; returns
 * the plugin's run, which ends once it sees the agent gone.
 */
async function killWhileCut(b: Bench, a: AgentProcess, plugin: () => Promise<PluginRun>, reached: () => Promise<boolean> | boolean, what: string): Promise<PluginRun> {
  const restore = await cut(b)
  const run = plugin()
  try {
    await waitFor(reached, { timeoutMs: 20_000, intervalMs: 5, what })
    await a.kill('SIGKILL')
  } finally {
    await restore()
  }
  return run
}

/** The journal's open records, read from its bytes as the next start would. */
function journalOpen(lab: Lab): PendingRecord[] {
  const file = join(lab.dir, 'state', JOURNAL_FILE)
  return existsSync(file) ? [...openRecords(parseJournal(readFileSync(file)).records.map((r) => r.record)).values()] : []
}

const handles = async (store: Datastore): Promise<string[]> => (await store.list(HANDLES_PREFIX)).items.map((kv) => kv.key.slice(HANDLES_PREFIX.length)).sort()

/**
 * Drops the agent's packets to etcd (nothing it sends arrives), in the lab's host namespace; returns the
 * undoing, for after the agent is killed.
 */
async function cut(b: Bench): Promise<() => Promise<void>> {
  const port = b.etcd.endpoint.split(':').pop() as string
  const ns = b.lab.hostNs
  await execa('ip', ['netns', 'exec', ns, 'nft', '-f', '-'], { input: `table inet pintocrash { chain out { type filter hook output priority 0; policy accept; tcp dport ${port} drop; }; }\n` })
  return async () => {
    // The dead agent's connections, which the kernel keeps retransmitting: destroyed, not let through.
    await execa('ip', ['netns', 'exec', ns, 'ss', '-K', 'dst', '127.0.0.1', 'dport', '=', `:${port}`], { reject: false })
    await execa('ip', ['netns', 'exec', ns, 'nft', 'delete', 'table', 'inet', 'pintocrash'])
  }
}

/**
 * The end state once the agent is back: nothing of `failed` held (handle, address, veth, interface in its
 * pod, open record), and `live` (handle to host veth) exactly what is held.
 */
async function nothingLeft(t: Test, b: Bench, what: string, failed: { handle: string; netns: string }, live: ReadonlyMap<string, string> = new Map()): Promise<void> {
  const want = [...live.keys()].sort()
  const got = await waitFor(async () => {
    const h = await handles(b.store)
    return JSON.stringify(h) === JSON.stringify(want) && journalOpen(b.lab).length === 0 ? h : undefined
  }, { timeoutMs: 20_000, what: `${what}: only the live handles, no open record` }).catch((err: Error) => err.message)
  t.same(got, want, `${what}: the handles are the live pods' alone`)
  t.same(journalOpen(b.lab), [], `${what}: no record left open`)
  const report = await checkIpam(new Ipam(b.store, { pools: [] }))
  t.same(report.problems.map(describeProblem), [], `${what}: ipam check clean`)
  t.equal(report.allocations, live.size, `${what}: one address per live pod, none for ${failed.handle}`)
  t.same((await b.lab.links(b.lab.hostNs)).sort(), ['eth0', 'lo', ...live.values()].sort(), `${what}: host veths are the live pods' alone`)
  t.same(await b.lab.links(basename(failed.netns)), ['lo'], `${what}: its pod has no interface left`)
}

/** The runtime's retry of the ADD: it succeeds, with the only address held. */
async function retryAdd(t: Test, b: Bench, what: string, att: { containerId: string; netns: string; args: string }): Promise<void> {
  const add = await b.lab.exec('pinto', 'ADD', pintoConf(b.lab, '1.0.0'), att)
  t.equal(add.code, 0, `${what}: the runtime's retry of the ADD succeeds: ${add.stdout.slice(0, 200)}`)
  const report = await checkIpam(new Ipam(b.store, { pools: [] }))
  t.equal(report.allocations, 1, `${what}: and holds the only address`)
  const del = await b.lab.exec('pinto', 'DEL', pintoConf(b.lab, '1.0.0'), att)
  t.equal(del.code, 0, `${what}: its DEL`)
}

/**
 * Kills the agent (and its held `ip`) mid-ADD: the ADD answers failure, and once a new agent is up nothing of
 * it is left. Returns the new agent.
 */
async function killMidAdd(t: Test, b: Bench, a: AgentProcess, add: Promise<PluginRun>, att: ReturnType<typeof attachment>): Promise<AgentProcess> {
  await a.kill('SIGKILL')
  killHeld(b.holdDir)
  const run = await add
  t.not(run.code, 0, `the ADD answered failure: ${run.stdout.slice(0, 200)}`)
  const next = await agent(t, b)
  await nothingLeft(t, b, 'after the restart', att)
  return next
}

/** A running agent, and a pod of `name` its ADD wired. */
async function added(t: Test, b: Bench, name: string): Promise<{ a: AgentProcess; att: ReturnType<typeof attachment> }> {
  const att = attachment(name, await b.lab.pod(name))
  const a = await agent(t, b)
  const add = await b.lab.exec('pinto', 'ADD', pintoConf(b.lab, '1.0.0'), att)
  t.equal(add.code, 0, 'the ADD succeeded')
  return { a, att }
}

function attachment(name: string, netns: string): { containerId: string; netns: string; args: string; handle: string } {
  const containerId = `crash-${name}`
  return { containerId, netns, args: `K8S_POD_NAMESPACE=crash;K8S_POD_NAME=${name}`, handle: handleOf('k8s-pod-network', containerId, 'eth0') }
}

t.test('crash points of ADD and DEL: after the agent is back, nothing leaked and nothing given twice', async (t) => {
  const b = await bench(t)
  const { lab } = b
  const conf = pintoConf(lab, '1.0.0')

  t.test('channel ADD: killed after the IPAM assign, before any wiring', async (t) => {
    const att = attachment('assigned', await lab.pod('assigned'))
    let a = await agent(t, b, 'pod-start')
    const add = lab.exec('pinto', 'ADD', conf, att)
    await waitFor(async () => held(b.holdDir).length > 0 && (await handles(b.store)).includes(att.handle), { timeoutMs: 20_000, what: 'the assign made, the wiring held' })
    t.same(await lab.links(basename(att.netns)), ['lo'], 'nothing wired yet')
    t.match(journalOpen(lab), [{ op: 'add', handle: att.handle }], 'the ADD is an open record')
    a = await killMidAdd(t, b, a, add, att)
    t.match(a.log(), 'rolled back a CNI ADD the last run never answered')
    await retryAdd(t, b, 'assigned', att)
    await a.kill('SIGTERM')
  })

  t.test('channel ADD: killed after the wiring, before the answer', async (t) => {
    const att = attachment('wired', await lab.pod('wired'))
    let a = await agent(t, b, 'host-end')
    const add = lab.exec('pinto', 'ADD', conf, att)
    await waitFor(async () => held(b.holdDir).length > 0 && (await lab.ip(basename(att.netns), ['-4', 'addr', 'show', 'dev', 'eth0'])).includes('198.18.'), { timeoutMs: 20_000, what: 'the pod wired, the answer not written' })
    const hostVeth = (await lab.links(lab.hostNs)).filter((l) => l !== 'lo' && l !== 'eth0')
    t.equal(hostVeth.length, 1, 'the host veth is there')
    t.match(await lab.ip(lab.hostNs, ['route', 'show', 'dev', hostVeth[0]!]), /198\.18\.\S+ scope link/, 'with its host route')
    a = await killMidAdd(t, b, a, add, att)
    await retryAdd(t, b, 'wired', att)
    await a.kill('SIGTERM')
  })

  t.test("the plugin's own ADD over the socket: killed while its assign is out", async (t) => {
    const att = attachment('socket', await lab.pod('socket'))
    let a = await agent(t, b)
    // Without the FIFO the plugin does the ADD itself, assigning over the socket.
    rmSync(`${lab.socket}.requests`)
    const run = await killWhileCut(b, a, () => lab.exec('pinto', 'ADD', conf, att), () => journalOpen(lab).some((r) => r.op === 'assign' && r.handle === att.handle), 'the assign recorded')
    t.not(run.code, 0, 'the ADD answered failure')
    t.match(run.stdout, /pinto-node releases what it may have assigned to this container when it starts again/)
    t.same(readdirSync(spoolDir(lab.socket)), [encodeURIComponent(att.handle)], 'the plugin owes the release')
    a = await agent(t, b)
    await nothingLeft(t, b, 'after the restart', att)
    t.same(readdirSync(spoolDir(lab.socket)), [], 'nothing owed any more')
    await retryAdd(t, b, 'socket', att)
    await a.kill('SIGTERM')
  })

  t.test('DEL: killed after the release is recorded, before the datastore write', async (t) => {
    const { a: first, att } = await added(t, b, 'deleted')
    let a = first
    // Its unwiring runs beside the release, and is done in a moment: a veth still there would keep the
    // release waiting for the runtime's next DEL (the addresses stay while a live wiring names them).
    const recorded = (): boolean => journalOpen(lab).some((r) => r.op === 'release' && r.handle === att.handle && r.cause === 'del')
    const del = await killWhileCut(b, a, () => lab.exec('pinto', 'DEL', conf, att), async () => recorded() && (await lab.links(lab.hostNs)).length === 2, 'the release recorded, the veth gone')
    t.not(del.code, 0, 'the DEL answered failure')
    t.ok((await handles(b.store)).includes(att.handle), 'the release never reached etcd')
    // The runtime would DEL again; the agent makes the release before it does.
    a = await agent(t, b)
    await waitFor(async () => !(await handles(b.store)).includes(att.handle), { timeoutMs: 20_000, what: 'the release made' })
    const again = await lab.exec('pinto', 'DEL', conf, att)
    t.equal(again.code, 0, "the runtime's DEL again succeeds")
    await nothingLeft(t, b, 'after the DEL', att)
    await retryAdd(t, b, 'deleted', att)
    await a.kill('SIGTERM')
  })

  t.test('DEL while the datastore is down: released once it is back, without the DEL asked again', async (t) => {
    const { a, att } = await added(t, b, 'down')
    await b.etcd.crash()
    let restarted = false
    t.teardown(async () => void (restarted || (await b.etcd.restart())))
    const del = await lab.exec('pinto', 'DEL', conf, att)
    t.not(del.code, 0, `the DEL answered failure: ${del.stdout.slice(0, 200)}`)
    t.match(journalOpen(lab), [{ op: 'release', handle: att.handle, cause: 'del' }], 'its release is an open record')
    t.same(await lab.links(basename(att.netns)), ['lo'], 'the pod is unwired')
    await b.etcd.restart()
    restarted = true
    await nothingLeft(t, b, 'once etcd is back', att)
    t.match(a.log(), 'IPAM release confirmed')
    await retryAdd(t, b, 'down', att)
    await a.kill('SIGTERM')
  })
})
