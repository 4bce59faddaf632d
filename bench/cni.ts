// bench/cni: per-op latency of pinto ADD and DEL (100 runs, p50/p99) beside the reference ptp + host-local,
// a bare `node -e 0` and pinto VERSION (as `pintoctl install-cni` installs it, and the bundle as built, with
// `#!/usr/bin/env node`), and the single executable (dist/sea/pinto, Node 26, with the CNI variables only)
// beside a bare Node 26 start when it is built, interleaved in one run so machine load hits all alike.
// Every exec goes through the same `ip netns exec HOST` wrapper, whose own cost is measured too (`true`).
// Run: npx tsc -p . && node scripts/bundle.js && node scripts/sea.js && node dist/bench/cni.js [runs]

import { execa } from 'execa'
import { existsSync, mkdirSync } from 'node:fs'
import { PLUGIN_EXEC_ENV } from '../agent/node-flags.js'
import { installCni, seaExecutable } from '../agent/install-cni.js'
import { join } from 'node:path'
import { BUNDLE, DIST, createLab, execPlugin } from '../test/cni/lab.js'

/** The Node.js scripts/node-lts.js fetched, which the single executable is built from. */
const NODE_LTS = join(DIST, '..', '.cache', 'node-v26.12.1', 'bin', 'node')

const RUNS = Number(process.argv[2] ?? 100)

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

async function main(): Promise<void> {
  const teardowns: (() => unknown)[] = []
  const lab = await createLab({ teardown: (fn) => void teardowns.push(fn) })
  try {
    const netns = await lab.pod('bench')
    const pinto = { cniVersion: '1.0.0', name: 'bench', type: 'pinto', mtu: 1500, ipam: { type: 'pinto-ipam', socket: lab.socket } }
    const ref = { cniVersion: '1.0.0', name: 'refnet', type: 'ptp', mtu: 1500, ipam: { type: 'host-local', ranges: [[{ subnet: '198.19.250.0/24' }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: `${lab.dir}/host-local` } }
    const att = { containerId: 'bench1', netns, args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=p' }
    const inHost = async (cmd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string }> => {
      const r = await execa('ip', ['netns', 'exec', lab.hostNs, cmd, ...args], { reject: false, env: { ...PLUGIN_EXEC_ENV, ...env }, input: '{}' })
      return { code: r.exitCode ?? -1, stdout: String(r.stdout) }
    }
    const m: Record<string, number[]> = { wrapper: [], bare: [], version: [], versionEnv: [], pintoAdd: [], pintoDel: [], refAdd: [], refDel: [], bare26: [], seaVersion: [], seaAdd: [], seaDel: [] }
    const sea = seaExecutable() !== undefined && existsSync(NODE_LTS) ? join(lab.dir, 'sea') : undefined
    if (sea !== undefined) {
      mkdirSync(sea)
      installCni({ binDir: sea, confDir: undefined })
    }
    const seaAtt = { ...att, containerId: 'bench2' }
    for (let i = 0; i < RUNS; i++) {
      if (sea !== undefined) {
        m.bare26!.push(await timed(() => inHost(NODE_LTS, ['-e', '0']), 'node 26 -e 0'))
        m.seaVersion!.push(await timed(() => execPlugin(lab, join(sea, 'pinto'), 'VERSION', '{}', {}, {}, false), 'SEA VERSION'))
        m.seaAdd!.push(await timed(() => execPlugin(lab, join(sea, 'pinto'), 'ADD', pinto, seaAtt, {}, false), 'SEA ADD'))
        m.seaDel!.push(await timed(() => execPlugin(lab, join(sea, 'pinto'), 'DEL', pinto, seaAtt, {}, false), 'SEA DEL'))
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
    const row = (name: string, xs: readonly number[]): string => `${name.padEnd(34)} p50 ${pct(xs, 50).toFixed(1).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(1).padStart(7)} ms`
    const out = [
      `bench/cni: ${RUNS} runs each, interleaved; every exec via \`ip netns exec\` (load ${(await import('node:os')).loadavg()[0]?.toFixed(1)})`,
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
