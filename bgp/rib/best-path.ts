// The BGP decision process (RFC 4271 §9.1.2.2 with the RFC 4456 §9 tie-breaks) as an ordered list
// of named steps, so the step that decided is kept and shown as the reason a path won. Pure: it
// reads paths and returns the winner, the reason and the multipath set; it never changes a path.

import { SegmentType } from '../codec/constants.js'
import { parseIpv4, parseIpv6 } from '../../net/index.js'
import { pathLength } from '../codec/as4.js'
import type { Path } from './types.js'

export interface DecisionContext {
  readonly localAsn: number
  /** Our BGP identifier as a number: the "router id" of locally originated paths. */
  readonly routerId: number
  /** LOCAL_PREF of a path without one (RFC 4271 default 100). */
  readonly defaultLocalPref: number
}

export interface Step {
  readonly name: string
  /** Negative when `a` is better, positive when `b` is, 0 when this step cannot tell them apart. */
  compare(a: Path, b: Path, ctx: DecisionContext): number
  /** RFC 4271 §9.1.2.2(c): MED only compares paths from the same neighbouring AS. */
  readonly sameNeighbourOnly?: boolean
}

export const DEFAULT_LOCAL_PREF = 100

const isLocal = (p: Path): number => (p.peer === undefined ? 0 : 1)
const isIbgp = (p: Path): number => (p.peer !== undefined && p.peer.type === 'ibgp' ? 1 : 0)

/** RFC 4271 §9.1.2.2(c): the leftmost AS of the path; our own AS when the path is empty. */
export function neighbourAs(p: Path, localAsn: number): number {
  for (const seg of p.attrs.attrs.asPath ?? []) {
    if (seg.type === SegmentType.AS_SEQUENCE || seg.type === SegmentType.AS_SET) return seg.asns[0] ?? localAsn
  }
  return localAsn
}

/** RFC 4456 §9: ORIGINATOR_ID stands in for the BGP identifier of the peer that sent the path. */
function routerIdOf(p: Path, ctx: DecisionContext): number {
  const text = p.attrs.attrs.originatorId ?? p.session?.routerId
  if (text === undefined) return ctx.routerId
  return parseIpv4(text) ?? 0
}

/** Addresses as comparable text: IPv4 before IPv6, each in numeric order. */
function addressOrder(address: string | undefined): string {
  if (address === undefined) return ''
  const v4 = parseIpv4(address)
  if (v4 !== undefined) return `4${v4.toString(16).padStart(8, '0')}`
  const v6 = parseIpv6(address)
  if (v6 !== undefined) return `6${Buffer.from(v6).toString('hex')}`
  return `9${address}`
}

/** The decision steps in order. Index i is reason i + 1 (reason 0 is "only path"). */
export const STEPS: readonly Step[] = [
  // BIRD (and so Calico) prefers its own static routes over anything learned by BGP.
  { name: 'local-origin', compare: (a, b) => isLocal(a) - isLocal(b) },
  {
    name: 'local-pref',
    compare: (a, b, ctx) => (b.attrs.attrs.localPref ?? ctx.defaultLocalPref) - (a.attrs.attrs.localPref ?? ctx.defaultLocalPref),
  },
  { name: 'as-path-length', compare: (a, b) => pathLength(a.attrs.attrs.asPath ?? []) - pathLength(b.attrs.attrs.asPath ?? []) },
  { name: 'origin', compare: (a, b) => (a.attrs.attrs.origin ?? 0) - (b.attrs.attrs.origin ?? 0) },
  { name: 'med', sameNeighbourOnly: true, compare: (a, b) => (a.attrs.attrs.med ?? 0) - (b.attrs.attrs.med ?? 0) },
  { name: 'ebgp-over-ibgp', compare: (a, b) => isIbgp(a) - isIbgp(b) },
  // (e) IGP cost is skipped: every next hop is directly connected in a pod network.
  { name: 'router-id', compare: (a, b, ctx) => routerIdOf(a, ctx) - routerIdOf(b, ctx) },
  {
    name: 'cluster-list-length',
    compare: (a, b) => (a.attrs.attrs.clusterList?.length ?? 0) - (b.attrs.attrs.clusterList?.length ?? 0),
  },
  {
    name: 'peer-address',
    compare: (a, b) => {
      const x = addressOrder(a.peer?.address)
      const y = addressOrder(b.peer?.address)
      return x < y ? -1 : x > y ? 1 : 0
    },
  },
  // Two add-path paths from one peer tie on everything above.
  { name: 'path-id', compare: (a, b) => a.prefix.pathId - b.prefix.pathId },
]

export const REASONS: readonly string[] = ['only path', ...STEPS.map((s) => s.name)]
/** Paths still tied after this step (inclusive) may share the traffic (ECMP). */
const MULTIPATH_LAST_STEP = STEPS.findIndex((s) => s.name === 'ebgp-over-ibgp')

export interface Decision {
  readonly best: Path
  /** Index into REASONS. */
  readonly reason: number
  /** Only when multipath is on and another path qualifies: the best first. */
  readonly multipath: Path[] | undefined
}

function sameNeighbour(a: Path, b: Path, ctx: DecisionContext): boolean {
  return neighbourAs(a, ctx.localAsn) === neighbourAs(b, ctx.localAsn)
}

/** Two paths: one comparison per step (equivalent to elimination, and allocation-free). */
function decidePair(a: Path, b: Path, ctx: DecisionContext, multipath: boolean): Decision {
  for (let i = 0; i < STEPS.length; i++) {
    const step = STEPS[i]!
    if (step.sameNeighbourOnly === true && !sameNeighbour(a, b, ctx)) continue
    const c = step.compare(a, b, ctx)
    if (c === 0) continue
    const best = c < 0 ? a : b
    const other = c < 0 ? b : a
    const multi = multipath && i > MULTIPATH_LAST_STEP && sameNeighbour(a, b, ctx) ? [best, other] : undefined
    return { best, reason: i + 1, multipath: multi }
  }
  return { best: a, reason: STEPS.length, multipath: multipath && sameNeighbour(a, b, ctx) ? [a, b] : undefined }
}

/** One elimination round: the candidates no other candidate beats at this step. */
function eliminate(step: Step, candidates: Path[], ctx: DecisionContext): Path[] {
  if (step.sameNeighbourOnly === true) {
    return candidates.filter((c) => !candidates.some((d) => d !== c && sameNeighbour(c, d, ctx) && step.compare(d, c, ctx) < 0))
  }
  let top = candidates[0]!
  for (const c of candidates) if (step.compare(c, top, ctx) < 0) top = c
  return candidates.filter((c) => step.compare(c, top, ctx) === 0)
}

/**
 * The best of `paths` (at least one). With several paths the RFC's elimination runs step by step;
 * the reason is the step that left one path standing.
 */
export function decide(paths: readonly Path[], ctx: DecisionContext, multipath: boolean): Decision {
  if (paths.length === 1) return { best: paths[0]!, reason: 0, multipath: undefined }
  if (paths.length === 2) return decidePair(paths[0]!, paths[1]!, ctx, multipath)
  let candidates = [...paths]
  let tied: Path[] | undefined
  let reason = STEPS.length
  for (let i = 0; i < STEPS.length && candidates.length > 1; i++) {
    const next = eliminate(STEPS[i]!, candidates, ctx)
    if (next.length === 1 && candidates.length > 1) reason = i + 1
    candidates = next
    if (i === MULTIPATH_LAST_STEP) tied = candidates
  }
  const best = candidates[0]!
  let multi: Path[] | undefined
  if (multipath && tied !== undefined && tied.length > 1) {
    const rest = tied.filter((p) => p !== best && sameNeighbour(p, best, ctx))
    if (rest.length > 0) multi = [best, ...rest]
  }
  return { best, reason, multipath: multi }
}
