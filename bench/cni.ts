// bench/cni: per-op latency of pinto ADD and DEL (100 runs, p50/p99) beside the reference ptp + host-local,
// a bare `node -e 0` and pinto VERSION (as `pintoctl install-cni` installs it, and the bundle as built, with
// `#!/usr/bin/env node`), and the single executable (dist/sea/pinto, Node 26, with the CNI variables only)
// beside a bare Node 26 start when it is built, interleaved in one run so machine load hits all alike.
// Every exec goes through the same `ip netns exec HOST` wrapper, whose own cost is measured too (`true`).
// With `--parallel N`: bursts of N concurrent ADDs, then N concurrent DELs, of the single executable as
// installed, each burst followed by the same burst of the reference, per-op and per-burst p50/p99, and a
// burst of its VERSION (its start and exit, no work) as the floor.
// `--other-sea FILE` installs another build of the executable too and measures it beside the first.
// Run: npx tsc -p . && node scripts/bundle.js && node scripts/sea.js && node dist/bench/cni.js [runs] [--parallel N] [--other-sea FILE]

import { execa } from 'execa'
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { PLUGIN_EXEC_ENV } from '../agent/node-flags.js'
import { installCni, seaExecutable } from '../agent/install-cni.js'
import { join } from 'node:path'
import { BUNDLE, DIST, type Lab, createLab, execPlugin } from '../test/cni/lab.js'
import { numberArg, positionalArgs, stringArg } from './args.js'
import { parseStat } from './proc-cpu.js'

/** The Node.js scripts/node-lts.js fetched, which the single executable is built from. */
const NODE_LTS = join(DIST, '..', '.cache', 'node-v26.12.1', 'bin', 'node')

const RUNS = Number(positionalArgs()[0] ?? 100)
/** Concurrent ADDs (then DELs) per burst; 0 runs the sequential bench. */
const PARALLEL = numberArg('--parallel', 0)
/** Another build of the single executable (a startup snapshot, say), measured beside dist/sea/pinto. */
const OTHER_SEA = stringArg('--other-sea')

function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number
}

async function timed(fn: () => Promise<{ code: number; stdout: string }>, what: string): Promise<number> {
  const t0 = process.hrtime.bigint()
  const r = await fn()
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (r.code !== 0) throw new Error(`${what} failed: ${r.stdout}`)
  return ms
}

const row = (name: string, xs: readonly number[]): string => `${name.padEnd(34)} p50 ${pct(xs, 50).toFixed(1).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(1).padStart(7)} ms`

const loadavg = async (): Promise<string> => (await import('node:os')).loadavg()[0]?.toFixed(1) ?? '?'

/** The reference's network config, its addresses from host-local's files in the lab. */
const refConf = (lab: Lab): Record<string, unknown> => ({ cniVersion: '1.0.0', name: 'refnet', type: 'ptp', mtu: 1500, ipam: { type: 'host-local', ranges: [[{ subnet: '198.19.250.0/24' }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: `${lab.dir}/host-local` } })

const pintoConf = (lab: Lab): Record<string, unknown> => ({ cniVersion: '1.0.0', name: 'bench', type: 'pinto', mtu: 1500, ipam: { type: 'pinto-ipam', socket: lab.socket } })

/**
 * RUNS rounds of: N concurrent ADDs of the single executable, then N concurrent DELs, then the same two
 * bursts of the reference, each pod its own namespace. Every op is timed on its own, and each burst whole.
 */
async function parallel(lab: Lab, n: number): Promise<string[]> {
  if (seaExecutable() === undefined) throw new Error('--parallel measures the single executable: run `node scripts/sea.js` first')
  const sea = join(lab.dir, 'sea')
  mkdirSync(sea)
  installCni({ binDir: sea, confDir: undefined })
  const other = OTHER_SEA === undefined ? undefined : join(lab.dir, 'other-sea')
  if (other !== undefined && OTHER_SEA !== undefined) {
    mkdirSync(other)
    copyFileSync(OTHER_SEA, join(other, 'pinto'))
    installCni({ binDir: other, confDir: undefined, seaDir: other })
  }
  const pods = await Promise.all(Array.from({ length: n }, (_, i) => lab.pod(`par${i}`)))
  const atts = pods.map((netns, i) => ({ containerId: `burst${i}`, netns, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=p${i}` }))
  const pinto = pintoConf(lab)
  const ref = refConf(lab)
  const keys = ['seaVersion', 'pintoAdd', 'pintoDel', 'otherAdd', 'otherDel', 'refAdd', 'refDel'] as const
  const ops = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<(typeof keys)[number], number[]>
  const bursts = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<(typeof keys)[number], number[]>
  const cpu = Object.fromEntries(keys.map((k) => [k, 0])) as Record<(typeof keys)[number], number>
  const burst = async (key: keyof typeof ops, run: (att: (typeof atts)[number]) => Promise<{ code: number; stdout: string }>): Promise<void> => {
    const t0 = process.hrtime.bigint()
    const c0 = childrenCpuMs()
    const each = await Promise.all(atts.map((att) => timed(() => run(att), `${key} ${att.containerId}`)))
    bursts[key].push(Number(process.hrtime.bigint() - t0) / 1e6)
    cpu[key] += childrenCpuMs() - c0
    ops[key].push(...each)
  }
  const load = [await loadavg()]
  for (let i = 0; i < RUNS; i++) {
    await burst('seaVersion', () => execPlugin(lab, join(sea, 'pinto'), 'VERSION', '{}', {}, {}, false))
    await burst('pintoAdd', (att) => execPlugin(lab, join(sea, 'pinto'), 'ADD', pinto, att, {}, false))
    await burst('pintoDel', (att) => execPlugin(lab, join(sea, 'pinto'), 'DEL', pinto, att, {}, false))
    if (other !== undefined) {
      await burst('otherAdd', (att) => execPlugin(lab, join(other, 'pinto'), 'ADD', pinto, att, {}, false))
      await burst('otherDel', (att) => execPlugin(lab, join(other, 'pinto'), 'DEL', pinto, att, {}, false))
    }
    await burst('refAdd', (att) => lab.exec('ptp', 'ADD', ref, att))
    await burst('refDel', (att) => lab.exec('ptp', 'DEL', ref, att))
  }
  load.push(await loadavg())
  const perOp = (k: (typeof keys)[number]): string => `${(cpu[k] / Math.max(1, ops[k].length)).toFixed(1)} ms`
  const rows: [string, (typeof keys)[number]][] = [
    ['SEA pinto VERSION', 'seaVersion'], ['SEA pinto ADD', 'pintoAdd'], ['SEA pinto DEL', 'pintoDel'],
    ...(other !== undefined ? [['other SEA pinto ADD', 'otherAdd'], ['other SEA pinto DEL', 'otherDel']] as [string, (typeof keys)[number]][] : []),
    ['ptp + host-local ADD', 'refAdd'], ['ptp + host-local DEL', 'refDel'],
  ]
  return [
    `bench/cni --parallel ${n}: ${RUNS} bursts of ${n} concurrent ops each, interleaved; every exec via \`ip netns exec\` (load ${load.join(' to ')})`,
    ...rows.map(([name, k]) => row(`${name}, per op`, ops[k])),
    ...rows.map(([name, k]) => row(`${name}, burst of ${n}`, bursts[k])),
    '',
    'CPU per op of the plugins execed (and their `ip netns exec`), the IPAM service\'s not in it:',
    ...rows.map(([name, k]) => `${name.padEnd(34)} ${perOp(k)}`),
  ]
}

/** CPU milliseconds of this process's children that have been waited for (cutime + cstime). */
function childrenCpuMs(): number {
  return parseStat(readFileSync('/proc/self/stat', 'utf8')).children
}

async function main(): Promise<void> {
  const teardowns: (() => unknown)[] = []
  const lab = await createLab({ teardown: (fn) => void teardowns.push(fn) })
  try {
    if (PARALLEL > 0) {
      process.stdout.write((await parallel(lab, PARALLEL)).join('\n') + '\n')
      return
    }
    const netns = await lab.pod('bench')
    const pinto = pintoConf(lab)
    const ref = refConf(lab)
    const att = { containerId: 'bench1', netns, args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=p' }
    const inHost = async (cmd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string }> => {
      const r = await execa('ip', ['netns', 'exec', lab.hostNs, cmd, ...args], { reject: false, env: { ...PLUGIN_EXEC_ENV, ...env }, input: '{}' })
      return { code: r.exitCode ?? -1, stdout: String(r.stdout) }
    }
    const m: Record<string, number[]> = { wrapper: [], bare: [], version: [], versionEnv: [], pintoAdd: [], pintoDel: [], refAdd: [], refDel: [], bare26: [], seaVersion: [], seaAdd: [], seaDel: [], otherVersion: [], otherAdd: [], otherDel: [] }
    const sea = seaExecutable() !== undefined && existsSync(NODE_LTS) ? join(lab.dir, 'sea') : undefined
    if (sea !== undefined) {
      mkdirSync(sea)
      installCni({ binDir: sea, confDir: undefined })
    }
    const seaAtt = { ...att, containerId: 'bench2' }
    const other = OTHER_SEA === undefined ? undefined : join(lab.dir, 'other-sea')
    if (other !== undefined && OTHER_SEA !== undefined) {
      if (sea === undefined) throw new Error('--other-sea: dist/sea/pinto is not built, nothing to compare it with')
      mkdirSync(other)
      copyFileSync(OTHER_SEA, join(other, 'pinto'))
      installCni({ binDir: other, confDir: undefined, seaDir: other })
    }
    for (let i = 0; i < RUNS; i++) {
      if (sea !== undefined) {
        m.bare26!.push(await timed(() => inHost(NODE_LTS, ['-e', '0']), 'node 26 -e 0'))
        m.seaVersion!.push(await timed(() => execPlugin(lab, join(sea, 'pinto'), 'VERSION', '{}', {}, {}, false), 'SEA VERSION'))
        m.seaAdd!.push(await timed(() => execPlugin(lab, join(sea, 'pinto'), 'ADD', pinto, seaAtt, {}, false), 'SEA ADD'))
        m.seaDel!.push(await timed(() => execPlugin(lab, join(sea, 'pinto'), 'DEL', pinto, seaAtt, {}, false), 'SEA DEL'))
      }
      if (other !== undefined) {
        m.otherVersion!.push(await timed(() => execPlugin(lab, join(other, 'pinto'), 'VERSION', '{}', {}, {}, false), 'other SEA VERSION'))
        m.otherAdd!.push(await timed(() => execPlugin(lab, join(other, 'pinto'), 'ADD', pinto, seaAtt, {}, false), 'other SEA ADD'))
        m.otherDel!.push(await timed(() => execPlugin(lab, join(other, 'pinto'), 'DEL', pinto, seaAtt, {}, false), 'other SEA DEL'))
      }
      m.wrapper!.push(await timed(() => inHost('true', []), 'true'))
      m.bare!.push(await timed(() => inHost('node', ['-e', '0']), 'node -e 0'))
      m.version!.push(await timed(() => lab.exec('pinto', 'VERSION', '{}'), 'pinto VERSION'))
      m.versionEnv!.push(await timed(() => inHost(join(BUNDLE, 'pinto.cjs'), [], { CNI_COMMAND: 'VERSION' }), 'pinto.cjs VERSION'))
      m.pintoAdd!.push(await timed(() => lab.exec('pinto', 'ADD', pinto, att), 'pinto ADD'))
      m.pintoDel!.push(await timed(() => lab.exec('pinto', 'DEL', pinto, att), 'pinto DEL'))
      m.refAdd!.push(await timed(() => lab.exec('ptp', 'ADD', ref, att), 'ptp ADD'))
      m.refDel!.push(await timed(() => lab.exec('ptp', 'DEL', ref, att), 'ptp DEL'))
    }
    const out = [
      `bench/cni: ${RUNS} runs each, interleaved; every exec via \`ip netns exec\` (load ${await loadavg()})`,
      row('ip netns exec true (wrapper)', m.wrapper!),
      row('node -e 0 (bare start)', m.bare!),
      row('pinto VERSION', m.version!),
      row('pinto VERSION, #!/usr/bin/env node', m.versionEnv!),
      row('pinto ADD (pinto-ipam)', m.pintoAdd!),
      row('pinto DEL', m.pintoDel!),
      row('ptp + host-local ADD (reference)', m.refAdd!),
      row('ptp + host-local DEL (reference)', m.refDel!),
    ]
    if (sea !== undefined) {
      out.push(
        row('node 26 -e 0 (bare start)', m.bare26!),
        row('SEA pinto VERSION (Node 26)', m.seaVersion!),
        row('SEA pinto ADD (pinto-ipam)', m.seaAdd!),
        row('SEA pinto DEL', m.seaDel!),
      )
    } else out.push('single executable: not built (node scripts/sea.js), no SEA rows')
    if (other !== undefined) {
      out.push(
        row('other SEA pinto VERSION', m.otherVersion!),
        row('other SEA pinto ADD (pinto-ipam)', m.otherAdd!),
        row('other SEA pinto DEL', m.otherDel!),
      )
    }
    const bare = pct(m.bare!, 50)
    const addOver = pct(m.pintoAdd!, 50) - bare
    const refAdd = pct(m.refAdd!, 50)
    const delTarget = pct(m.refDel!, 50) + bare
    out.push(
      `target ADD: pinto p50 - bare start = ${addOver.toFixed(1)} ms <= reference ADD p50 ${refAdd.toFixed(1)} ms: ${addOver <= refAdd ? 'met' : 'NOT met'}`,
      `target DEL: pinto p50 ${pct(m.pintoDel!, 50).toFixed(1)} ms <= reference DEL p50 + bare start = ${delTarget.toFixed(1)} ms: ${pct(m.pintoDel!, 50) <= delTarget ? 'met' : 'NOT met'}`,
      `VERSION - bare start (bundle load + work): ${(pct(m.version!, 50) - bare).toFixed(1)} ms; the bundle as built, through env: ${(pct(m.versionEnv!, 50) - bare).toFixed(1)} ms`,
    )
    process.stdout.write(out.join('\n') + '\n')
  } finally {
    for (const fn of teardowns.reverse()) await fn()
  }
}

await main()
