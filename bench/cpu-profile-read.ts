// Reading a V8 .cpuprofile for the bench commands that print where time went: its types, the call tree
// (nodes by id, each node's caller), time per node and per sample, and the package or area of a script URL.
// It only reads: it groups nothing into parts and prints nothing (cpu-profile-top.ts, node-path-profile.ts do).
import { readFileSync } from 'node:fs'

export interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: readonly number[]
}

export interface Profile {
  readonly nodes: readonly ProfileNode[]
  readonly samples: readonly number[]
  readonly timeDeltas: readonly number[]
  readonly startTime: number
  readonly endTime: number
}

export interface ProfileTree {
  readonly profile: Profile
  readonly byId: ReadonlyMap<number, ProfileNode>
  /** Each node's caller (absent for the root). */
  readonly parent: ReadonlyMap<number, number>
}

export function readProfile(file: string): ProfileTree {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  return { profile, byId, parent }
}

/** Microseconds each node was the sampled (innermost) frame, a sample counting its own delta (the time since the one before). */
export function selfTimeByNode(p: Profile): Map<number, number> {
  const self = new Map<number, number>()
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)))
  return self
}

/** Each sample in order: its node, its time in ms from the profile's start, and the ms until the next sample (0 for the last). */
export function forEachSample(p: Profile, f: (id: number, atMs: number, untilNextMs: number) => void): void {
  let t = 0
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]! / 1000
    f(p.samples[i]!, t, (p.timeDeltas[i + 1] ?? 0) / 1000)
  }
}

/** The package or area a script URL belongs to. */
export function areaOf(url: string): string {
  if (url === '') return '(native / vm)'
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (m !== null) return m[1] as string
  const d = /\/dist\/(.+)$/.exec(url)
  return d !== null ? (d[1] as string) : url
}
