// A timeline of where pinto-node's thread spent a table's arrival, read from a V8 CPU profile
// (`node dist/bench/node-path.js --node-args '--cpu-prof --cpu-prof-dir=DIR'`): per time slice, the share
// of samples in each part (BGP codec, session, RIB, the agent's feed, felix, GC, idle), each sample given
// to the innermost frame of the project's own code. Only reads the profile; prints a table.
// Run: node dist/bench/node-path-profile.js FILE.cpuprofile [--slice-ms 100] [--from-ms 0] [--to-ms 1e9]
//   [--on-stack flush,send] (a column each: ms with that function anywhere on the stack) [--top N]

import { table } from '../agent/demo/tables.js'
import { numberArg, positionalArgs } from './args.js'
import { type ProfileNode, forEachSample, readProfile } from './cpu-profile-read.js'

const PARTS: readonly (readonly [string, RegExp])[] = [
  ['codec', /\/bgp\/codec\//],
  ['session', /\/bgp\/session\/|\/bgp\/speaker/],
  ['rib', /\/bgp\/rib\//],
  ['agent', /\/agent\//],
  ['felix', /\/felix\//],
  ['deps', /node_modules/],
]

/** The part a frame belongs to, or undefined for frames outside the project (Node's own, natives). */
function partOf(n: ProfileNode): string | undefined {
  const name = n.callFrame.functionName
  if (name === '(garbage collector)') return 'gc'
  if (name === '(idle)') return 'idle'
  if (name === '(program)') return 'program'
  for (const [part, re] of PARTS) if (re.test(n.callFrame.url)) return part
  return undefined
}

const [file] = positionalArgs()
if (file === undefined) throw new Error('usage: node-path-profile FILE.cpuprofile [--slice-ms 100]')
const SLICE_MS = numberArg('--slice-ms', 100)
const FROM_MS = numberArg('--from-ms', 0)
const TO_MS = numberArg('--to-ms', 1e9)
const { profile, byId, parent } = readProfile(file)

// Each node's part: its own, else the nearest ancestor's that has one (a native called by felix is felix's).
const part = new Map<number, string>()
const resolve = (id: number): string => {
  const known = part.get(id)
  if (known !== undefined) return known
  const own = partOf(byId.get(id)!)
  const p = parent.get(id)
  const v = own ?? (p === undefined ? 'node' : resolve(p))
  part.set(id, v)
  return v
}

// Functions asked for by name: whether each node has one of them on its stack (itself or an ancestor).
const onStackArg = process.argv.indexOf('--on-stack')
const watched = onStackArg < 0 ? [] : (process.argv[onStackArg + 1] ?? '').split(',').filter((x) => x !== '')
const under = watched.map(() => new Map<number, boolean>())
const isUnder = (w: number, id: number): boolean => {
  const known = under[w]!.get(id)
  if (known !== undefined) return known
  const p = parent.get(id)
  const v = byId.get(id)!.callFrame.functionName === watched[w] || (p !== undefined && isUnder(w, p))
  under[w]!.set(id, v)
  return v
}

const names = ['codec', 'session', 'rib', 'agent', 'felix', 'deps', 'node', 'program', 'gc', 'idle']
const slices = new Map<number, Map<string, number>>()
const totals = new Map<string, number>()
forEachSample(profile, (id, t, dt) => {
  if (t < FROM_MS || t > TO_MS) return
  const p = resolve(id)
  const s = Math.floor(t / SLICE_MS)
  const m = slices.get(s) ?? new Map<string, number>()
  slices.set(s, m)
  m.set(p, (m.get(p) ?? 0) + dt)
  totals.set(p, (totals.get(p) ?? 0) + dt)
  for (let w = 0; w < watched.length; w++) {
    if (!isUnder(w, id)) continue
    const key = `@${watched[w]}`
    m.set(key, (m.get(key) ?? 0) + dt)
    totals.set(key, (totals.get(key) ?? 0) + dt)
  }
})
names.push(...watched.map((w) => `@${w}`))

const rows: string[][] = []
for (const s of [...slices.keys()].sort((a, b) => a - b)) {
  const m = slices.get(s)!
  if ((m.get('idle') ?? 0) >= SLICE_MS * 0.98) continue
  rows.push([`${(s * SLICE_MS).toFixed(0)}`, ...names.map((n) => ((m.get(n) ?? 0)).toFixed(0))])
}
rows.push(['total', ...names.map((n) => (totals.get(n) ?? 0).toFixed(0))])
process.stdout.write(`${file}: ms of each ${SLICE_MS} ms slice (from the profile's start; slices all idle left out)\n`)
process.stdout.write(table(['at ms', ...names], rows))

// --top N: the functions with the most self time in the window, with their part.
const TOP = numberArg('--top', 0)
if (TOP > 0) {
  const self = new Map<string, number>()
  forEachSample(profile, (id, at, dt) => {
    if (at < FROM_MS || at > TO_MS) return
    const n = byId.get(id)!
    const key = `${resolve(n.id)} ${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, '')}`
    self.set(key, (self.get(key) ?? 0) + dt)
  })
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP)
  process.stdout.write(table(['self ms', 'part function file'], top.map(([k, v]) => [v.toFixed(1), k])))
}
