// bench/builds' figures: a bench's summary figures read back from its printed report (for a build whose
// bench cannot write --json), and two builds' runs of one bench set side by side. Pure: text in, text out.
// The figure names match what node-path, reflect and ipam-scale write with --json.

import { table } from '../agent/demo/tables.js'
import type { Figure } from './json-figures.js'

/** The benches bench/builds knows how to read. */
export const BENCHES = ['node-path', 'reflect', 'ipam-scale'] as const
export type BenchName = (typeof BENCHES)[number]

const num = (s: string | undefined): number => (s === undefined ? NaN : Number(s))

/** Adds a figure unless one of that name is there already (reflect prints its rows twice). */
function add(out: Figure[], name: string, value: number, unit: Figure['unit'], anchor = false): void {
  if (out.some((f) => f.name === name)) return
  out.push({ name, value: Number.isFinite(value) ? value : null, unit, ...(anchor ? { anchor } : {}) })
}

/** The cells of a boxed table's row (`| a | b |`), trimmed; undefined for any other line. */
function cells(line: string): string[] | undefined {
  if (!line.startsWith('| ')) return undefined
  return line.slice(1, -1).split('|').map((c) => c.trim())
}

function nodePath(text: string): Figure[] {
  const out: Figure[] = []
  for (const line of text.split('\n')) {
    // The progress line of each table: pinto-node's time and VmHWM, then BIRD's when it ran.
    const m = /^(ipv4|ipv6) (\d+): pinto-node \.\.\. ([\d.]+) s \(CPU [\d.]+ s\), ([\d.]+) MB, churn \d+ changes;(?: BIRD \.\.\. ([\d.]+) s \(CPU [\d.]+ s\), ([\d.]+) MB)?/.exec(line)
    if (m !== null) {
      add(out, `${m[1]} ${m[2]} pinto-node: table in`, num(m[3]), 's')
      add(out, `${m[1]} ${m[2]} pinto-node: VmHWM`, num(m[4]), 'MB')
      if (m[5] !== undefined) {
        add(out, `${m[1]} ${m[2]} BIRD 2: table in`, num(m[5]), 's', true)
        add(out, `${m[1]} ${m[2]} BIRD 2: VmHWM`, num(m[6]), 'MB', true)
      }
      continue
    }
    // The churn table (printed only with BIRD): table held, receiver, changes, p50, p99, ...
    const c = cells(line)
    if (c !== undefined && c.length >= 5 && /^(ipv4|ipv6) \d+$/.test(c[0]!) && /^\d+(?: \(of |$)/.test(c[2]!) && (c[1] === 'pinto-node' || c[1] === 'BIRD 2')) {
      const anchor = c[1] === 'BIRD 2'
      add(out, `${c[0]} ${c[1]}: churn p50`, c[3] === '-' ? NaN : num(c[3]), 'ms', anchor)
      add(out, `${c[0]} ${c[1]}: churn p99`, c[4] === '-' ? NaN : num(c[4]), 'ms', anchor)
    }
  }
  return out
}

function reflect(text: string): Figure[] {
  const out: Figure[] = []
  const hwm = new Map<string, number>()
  for (const line of text.split('\n')) {
    const c = cells(line)
    if (c === undefined || c.length < 2) continue
    const [measure, value] = c as [string, string]
    const kind = /^(pinto|BIRD 2): /.exec(measure)?.[1]
    if (kind !== undefined) {
      const anchor = kind === 'BIRD 2'
      if (/: cold start, every client holds all \d+ routes/.test(measure)) {
        const s = [...value.matchAll(/([\d.]+) s/g)].map((x) => num(x[1]))
        add(out, `${kind}: cold start, every client holds every route`, s.length > 0 ? Math.max(...s) : NaN, 's', anchor)
      } else if (/: cold start \(did not finish\)/.test(measure)) {
        add(out, `${kind}: cold start, every client holds every route`, NaN, 's', anchor)
      } else if (/: one \/26 change at all \d+ clients/.test(measure)) {
        const m = /([\d.]+) \/ ([\d.]+) ms/.exec(value)
        add(out, `${kind}: one change at every client p50`, num(m?.[1]), 'ms', anchor)
        add(out, `${kind}: one change at every client p99`, num(m?.[2]), 'ms', anchor)
      } else if (/: rr\d+ VmHWM/.test(measure)) {
        hwm.set(kind, Math.max(hwm.get(kind) ?? 0, num(/^([\d.]+) MB/.exec(value)?.[1])))
      }
      continue
    }
    if (measure === 'client pinto-node with dataplane: VmRSS / VmHWM') add(out, 'client pinto-node: VmHWM', num(/\/ ([\d.]+) MB/.exec(value)?.[1]), 'MB')
    else if (measure.startsWith('client pinto-node with dataplane: idle CPU')) add(out, 'client pinto-node: idle CPU', num(/= ([\d.]+) %/.exec(value)?.[1]), '%')
  }
  // In the order --json writes them: each kind's VmHWM after its other figures.
  for (const [kind, mb] of hwm) {
    const at = out.findIndex((f) => f.name === `${kind}: one change at every client p99`)
    const f: Figure = { name: `${kind}: reflector VmHWM (the larger)`, value: Number.isFinite(mb) ? mb : null, unit: 'MB', ...(kind === 'BIRD 2' ? { anchor: true } : {}) }
    out.splice(at < 0 ? out.length : at + 1, 0, f)
  }
  return out
}

function ipamScale(text: string): Figure[] {
  const out: Figure[] = []
  let path: string | undefined
  let floor: RegExpExecArray | undefined
  for (const line of text.split('\n')) {
    const check = /^pintoctl ipam check --nodes=<all \d+>: ([\d.]+) s .*?, exit (\d+)/.exec(line)
    if (check !== null) add(out, 'pintoctl ipam check', check[2] === '0' ? num(check[1]) : NaN, 's')
    // The last one-transaction line is the one with every agent's client at once.
    const f = /^etcd alone, an ADD's two writes in one transaction .*?, (\d+) clients? at once: p50 ([\d.]+) ms {2}p99 ([\d.]+) ms/.exec(line)
    if (f !== null) floor = f
    if (line.startsWith('agent IPAM service')) path = 'service'
    else if (line.startsWith('IPAM part')) path = 'ipam'
    const add99 = /^ {2}ADD p50 ([\d.]+) ms {2}p99 ([\d.]+) ms/.exec(line)
    if (add99 !== null && path !== undefined) {
      add(out, `${path} path: ADD p50`, num(add99[1]), 'ms')
      add(out, `${path} path: ADD p99`, num(add99[2]), 'ms')
    }
  }
  if (floor !== undefined) {
    const at = out.findIndex((x) => x.name === 'pintoctl ipam check') + 1
    out.splice(at, 0,
      { name: `etcd alone: an ADD's writes in one transaction, ${floor[1]} clients, p50`, value: num(floor[2]), unit: 'ms', anchor: true },
      { name: `etcd alone: an ADD's writes in one transaction, ${floor[1]} clients, p99`, value: num(floor[3]), unit: 'ms', anchor: true })
  }
  return out
}

/** A bench's summary figures read from its printed report (what --json would have written, at print precision). */
export function figuresFromPrinted(bench: BenchName, text: string): Figure[] {
  switch (bench) {
    case 'node-path': return nodePath(text)
    case 'reflect': return reflect(text)
    case 'ipam-scale': return ipamScale(text)
    default: {
      const never: never = bench
      throw new Error(`no reader for the printed report of ${String(never)}`)
    }
  }
}

/** One run of one bench from one build, as bench/builds kept it. */
export interface Run {
  readonly bench: BenchName
  readonly build: 'base' | 'current'
  readonly round: number
  /** --json, or the printed report when the build's bench wrote no file. */
  readonly source: 'json' | 'printed' | 'none'
  readonly exit: number | null
  readonly seconds: number
  readonly loadStart: number
  readonly loadEnd: number
  readonly figures: readonly Figure[]
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

function fmt(v: number): string {
  if (!Number.isFinite(v)) return '-'
  const a = Math.abs(v)
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2)
}

/**
 * Where current stands against base for one figure: `overlap` when the two builds' runs overlap (the
 * difference is inside the run-to-run spread), else which is lower. Needs two runs of each build.
 */
export function verdict(base: readonly number[], current: readonly number[]): string {
  if (base.length < 2 || current.length < 2) return '-'
  const [bLo, bHi, cLo, cHi] = [Math.min(...base), Math.max(...base), Math.min(...current), Math.max(...current)]
  if (cLo <= bHi && bLo <= cHi) return 'overlap'
  return cHi < bLo ? 'current lower' : 'current higher'
}

/** One bench's figures, every round of each build, their medians and the ratio current/base. */
export function compareTable(runs: readonly Run[]): string {
  const names: Figure[] = []
  for (const r of runs) for (const f of r.figures) if (!names.some((n) => n.name === f.name)) names.push(f)
  const values = (build: Run['build'], name: string): number[] => runs
    .filter((r) => r.build === build)
    .map((r) => r.figures.find((f) => f.name === name)?.value)
    .filter((v): v is number => typeof v === 'number')
  // pinto's figures first, then the anchors (their drift between the builds' runs is the machine's).
  const ordered = [...names.filter((f) => f.anchor !== true), ...names.filter((f) => f.anchor === true)]
  const rows = ordered.map((f) => {
    const b = values('base', f.name)
    const c = values('current', f.name)
    const ratio = b.length > 0 && c.length > 0 ? median(c) / median(b) : NaN
    return [
      `${f.name}${f.anchor === true ? ' (anchor)' : ''}`,
      f.unit,
      b.map(fmt).join(' / ') || '-',
      c.map(fmt).join(' / ') || '-',
      Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : '-',
      verdict(b, c),
    ]
  })
  return table(['figure', 'unit', 'base (each run)', 'current (each run)', 'current/base (medians)', 'runs'], rows)
}

/** Every run in the order it ran, with the load average at its start and end. */
export function runsTable(runs: readonly Run[]): string {
  return table(['#', 'bench', 'build', 'round', 'figures from', 'exit', 'took', 'load at start', 'load at end'], runs.map((r, i) => [
    String(i + 1), r.bench, r.build, String(r.round), r.source, r.exit === null ? 'signal' : String(r.exit), `${r.seconds.toFixed(0)} s`, r.loadStart.toFixed(2), r.loadEnd.toFixed(2),
  ]))
}
