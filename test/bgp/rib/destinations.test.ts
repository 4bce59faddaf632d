// The destination table (bgp/rib/destinations.ts) through its own methods against a reference model: a
// Map from prefix to its paths, in the order they came, with the best decided by best-path.ts. Random
// operations (single paths and add-path ids, our own routes, dump runs, removals, stale marking and
// sweeps, Adj-RIB-Out holds, flushes) must leave the same paths, the same best paths with their reasons
// and multipath sets, the same PATH_* results, the same attribute-set references, report at each flush
// exactly the destinations whose best changed, with the best each had before, and free what nobody holds.

import t from 'tap'
import { AttributeInterner, type InternedAttributes } from '../../../bgp/codec/intern.js'
import { formatPrefix, ipv4Prefix, parsePrefix, type Prefix } from '../../../bgp/index.js'
import { decide, REASONS, type DecisionContext } from '../../../bgp/rib/best-path.js'
import { Destinations, PATH_ADDED, PATH_REMOVED, PATH_WAS_STALE, type PathSource } from '../../../bgp/rib/destinations.js'
import { PreviousBest } from '../../../bgp/rib/settle.js'
import type { PeerSessionInfo, RibPeer } from '../../../bgp/rib/index.js'
import { LOCAL_AS, attrs, peer } from './helpers.js'
import { Rng } from '../../harness/random.js'

const CTX: DecisionContext = { localAsn: LOCAL_AS, routerId: 0xc00002fe, defaultLocalPref: 100 }

/** A path of the model: what the table must hold for it. */
interface ModelPath {
  readonly prefix: Prefix
  readonly peer: RibPeer | undefined
  readonly session: PeerSessionInfo | undefined
  readonly attrs: InternedAttributes
  stale: boolean
}

const keyOf = (p: Prefix): string => formatPrefix(p)

/** A path as compared: who sent it over which session, with which path id and attribute set. */
function pathText(p: { prefix: Prefix; peer: RibPeer | undefined; session: PeerSessionInfo | undefined; attrs: InternedAttributes; stale: boolean }, sessions: Map<PeerSessionInfo, number>): string {
  let s = sessions.get(p.session!)
  if (p.session !== undefined && s === undefined) sessions.set(p.session, (s = sessions.size))
  return `${p.peer?.name ?? 'ours'}#${p.prefix.pathId} session=${s ?? '-'} attrs=${p.attrs.id} stale=${p.stale}`
}

t.test('the destination table against a Map of prefix to paths, operation by operation', async (t) => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const rng = new Rng(seed)
    const multipath = seed % 2 === 0
    const interner = new AttributeInterner()
    const table = new Destinations(interner, CTX, multipath)
    const model = new Map<string, ModelPath[]>()
    const prefixOf = new Map<string, Prefix>()
    /** Holds per destination key, as Adj-RIB-Outs make them. */
    const holds = new Map<string, number>()
    /** The best path (as text) last reported for each key by a flush. */
    const reported = new Map<string, string>()
    const sessions = new Map<PeerSessionInfo, number>()
    const where = (step: number): string => `seed ${seed} step ${step}`
    // Mismatches found since the last flush, asserted empty at each: one assertion per flush, not per path.
    const wrong: string[] = []
    const same = (actual: unknown, expected: unknown, what: string): void => {
      const a = JSON.stringify(actual)
      const e = JSON.stringify(expected)
      if (a !== e) wrong.push(`${what}: ${a}, expected ${e}`)
    }

    const peers = [peer({ address: '192.0.2.1' }), peer({ address: '192.0.2.2' }), peer({ address: '192.0.2.3', asn: 65001 }), peer({ address: '192.0.2.4', asn: 65001 })]
    const sources = new Map<number, PathSource>()
    const sourceOf = (who: RibPeer): PathSource => {
      let s = sources.get(who.id)
      // Now and then a new session: the same peer over another session object.
      if (s === undefined || rng.int(20) === 0) sources.set(who.id, (s = { peer: who, session: { routerId: `192.0.2.${100 + rng.int(2)}` } }))
      return s
    }
    const LOCAL: PathSource = { peer: undefined, session: undefined }
    const sets = [
      attrs(),
      attrs({ localPref: 200 }),
      attrs({ med: 5 }),
      attrs({ asns: [65001] }),
      attrs({ asns: [65001, 65002] }),
      attrs({ nextHop: '192.0.2.20' }),
    ]
    const pool: Prefix[] = []
    // Half the seeds with more prefixes than the table remembers per peer for a session's end (it scans then).
    for (let i = 0; i < (seed > 4 ? 200 : 24); i++) pool.push(ipv4Prefix((0xc6120000 + i * 256) >>> 0, [24, 26, 32][i % 3]!))
    pool.push(parsePrefix('2001:db8:1::/64'), parsePrefix('2001:db8:2::/48'))
    const withId = (p: Prefix, pathId: number): Prefix => (pathId === 0 ? p : { ...p, pathId })

    const bestOf = (paths: readonly ModelPath[]): ReturnType<typeof decide> | undefined => (paths.length === 0 ? undefined : decide(paths, CTX, multipath))
    const bestText = (paths: readonly ModelPath[]): string => {
      const r = bestOf(paths)
      if (r === undefined) return 'none'
      return `${pathText({ ...r.best, stale: false }, sessions)} multi=${(r.multipath ?? []).map((p) => pathText({ ...p, stale: false }, sessions)).join('|')}`
    }
    const tableBestText = (d: number): string => {
      const b = table.best(d)
      if (b === undefined) return 'none'
      const multi = b.multipath.length > 1 ? b.multipath : []
      return `${pathText({ ...b.path, stale: false }, sessions)} multi=${multi.map((p) => pathText({ ...p, stale: false }, sessions)).join('|')}`
    }

    /** The model's setPath: the PATH_* flags the table must return. */
    const modelSet = (src: PathSource, p: Prefix, a: InternedAttributes): number => {
      const key = keyOf(p)
      prefixOf.set(key, p)
      const paths = model.get(key) ?? []
      model.set(key, paths)
      const i = paths.findIndex((x) => x.peer?.id === src.peer?.id && x.prefix.pathId === p.pathId)
      if (i < 0) {
        paths.push({ prefix: p, peer: src.peer, session: src.session, attrs: a, stale: false })
        return PATH_ADDED
      }
      const old = paths[i]!
      const was = old.stale ? PATH_WAS_STALE : 0
      // The same path again keeps the path as it was, session included, and only clears stale.
      if (old.attrs === a && old.peer === src.peer && old.session?.routerId === src.session?.routerId) old.stale = false
      else paths[i] = { prefix: old.prefix, peer: src.peer, session: src.session, attrs: a, stale: false }
      return was
    }
    const modelRemove = (peerId: number | undefined, p: Prefix): number => {
      const paths = model.get(keyOf(p)) ?? []
      const i = paths.findIndex((x) => x.peer?.id === peerId && x.prefix.pathId === p.pathId)
      if (i < 0) return 0
      const [old] = paths.splice(i, 1)
      return PATH_REMOVED | (old!.stale ? PATH_WAS_STALE : 0)
    }

    const sink = {
      step: 0,
      seen: new Set<string>(),
      added(d: number, afi: 1 | 2, addr4: number, len: number, source: PathSource, a: InternedAttributes, held: boolean): void {
        const prefix = table.prefix(d)
        same(held, (holds.get(keyOf(prefix)) ?? 0) > 0, `${where(this.step)}: ${keyOf(prefix)} held`)
        same([afi, afi === 1 ? addr4 : 0, len], [prefix.afi, prefix.afi === 1 ? prefix.addr : 0, prefix.len], `${where(this.step)}: ${keyOf(prefix)} added as itself`)
        const only = table.paths(d)
        same(only.length === 1 && only[0]!.peer === source.peer && only[0]!.session === source.session && only[0]!.attrs === a, true, `${where(this.step)}: ${keyOf(prefix)} added with its only path`)
        this.bestChanged(d, new PreviousBest())
      },
      addedRun(from: number, to: number, source: PathSource, a: InternedAttributes): void {
        for (let d = from; d < to; d++) {
          const prefix = table.prefix(d)
          this.added(d, prefix.afi, prefix.afi === 1 ? prefix.addr : 0, prefix.len, source, a, false)
        }
      },
      bestChanged(d: number, previous: PreviousBest): void {
        const prefix = table.prefix(d)
        const key = keyOf(prefix)
        same(this.seen.has(key), false, `${where(this.step)}: ${key} reported once`)
        this.seen.add(key)
        const before = reported.get(key) ?? 'none'
        same(previous.none, before === 'none', `${where(this.step)}: ${key} had a best before`)
        const prev = previous.path(prefix)
        if (prev !== undefined) same(`${pathText({ ...prev, stale: false }, sessions)} multi=`, before.replace(/multi=.*/, 'multi='), `${where(this.step)}: ${key}'s previous best`)
        reported.set(key, tableBestText(d))
      },
    }

    const check = (step: number): void => {
      sink.step = step
      sink.seen.clear()
      const expectChanged = new Set<string>()
      for (const [key, paths] of model) if (bestText(paths) !== (reported.get(key) ?? 'none')) expectChanged.add(key)
      table.settleChanged(sink)
      same([...sink.seen].sort(), [...expectChanged].sort(), `${where(step)}: the destinations whose best changed`)
      same(table.changed, false, `${where(step)}: nothing left to settle`)
      let live = 0
      for (const [key, paths] of model) {
        const d = table.find(prefixOf.get(key)!)
        const held = (holds.get(key) ?? 0) > 0
        if (paths.length === 0 && !held) {
          same(d, -1, `${where(step)}: ${key}, empty and unheld, is freed`)
          continue
        }
        live++
        same(d >= 0, true, `${where(step)}: ${key} is a destination`)
        same(table.paths(d).map((p) => pathText(p, sessions)).sort(), paths.map((p) => pathText(p, sessions)).sort(), `${where(step)}: ${key}'s paths`)
        same(tableBestText(d), bestText(paths), `${where(step)}: ${key}'s best`)
        const r = bestOf(paths)
        same(table.best(d)?.reason, r === undefined ? undefined : REASONS[r.reason], `${where(step)}: ${key}'s reason`)
      }
      same(table.size, live, `${where(step)}: every destination with a path or a holder, no other`)
      const used = new Set<InternedAttributes>()
      for (const paths of model.values()) for (const p of paths) used.add(p.attrs)
      same(interner.size, used.size, `${where(step)}: attribute sets held while, and only while, a path holds them`)
      t.same(wrong, [], `${where(step)}: the table and the model agree`)
      wrong.length = 0
    }

    for (let step = 0; step < 500; step++) {
      const x = rng.int(100)
      const who = rng.pick(peers)
      if (x < 35) {
        const src = rng.int(8) === 0 ? LOCAL : sourceOf(who)
        const p = withId(rng.pick(pool), src === LOCAL || rng.int(4) !== 0 ? 0 : 1 + rng.int(2))
        const a = interner.intern(rng.pick(sets))
        const expected = modelSet(src, p, a)
        same(table.setPath(src, p, a), expected, `${where(step)}: setPath ${keyOf(p)}#${p.pathId} result`)
        interner.release(a)
      } else if (x < 50 && table.runsAppend) {
        const src = sourceOf(who)
        const from = rng.int(pool.length - 6)
        const run = pool.slice(from, from + 1 + rng.int(6)).filter((p) => p.afi === 1)
        const a = interner.intern(rng.pick(sets))
        const held: number[] = []
        const addr = new Int32Array(run.map((p) => (p.afi === 1 ? p.addr | 0 : 0)))
        const added = table.addRun(src, { count: run.length, addr, len: new Uint8Array(run.map((p) => p.len)) }, a, held)
        let expectAdded = 0
        run.forEach((p, i) => {
          if (held.includes(i)) return
          expectAdded += modelSet(src, p, a) === PATH_ADDED ? 1 : 0
        })
        same(added, expectAdded, `${where(step)}: addRun's new destinations`)
        for (const i of held) same(table.setPath(src, run[i]!, a), modelSet(src, run[i]!, a), `${where(step)}: a run's held prefix`)
        interner.release(a)
      } else if (x < 65) {
        const local = rng.int(8) === 0
        const p = withId(rng.pick(pool), local || rng.int(4) !== 0 ? 0 : 1 + rng.int(2))
        same(table.removePath(local ? undefined : who.id, p), modelRemove(local ? undefined : who.id, p), `${where(step)}: removePath result`)
      } else if (x < 70) {
        const afi = 1 + rng.int(2)
        let marked = 0
        for (const paths of model.values()) {
          for (const p of paths) {
            if (p.peer?.id === who.id && p.prefix.afi === afi && !p.stale) {
              p.stale = true
              marked++
            }
          }
        }
        same(table.markStale(who.id, afi), marked, `${where(step)}: markStale count`)
      } else if (x < 75) {
        const afi = 1 + rng.int(2)
        const staleOnly = rng.int(2) === 0
        let removed = 0
        let stale = 0
        for (const paths of model.values()) {
          for (let i = paths.length - 1; i >= 0; i--) {
            const p = paths[i]!
            if (p.peer?.id !== who.id || p.prefix.afi !== afi || (staleOnly && !p.stale)) continue
            paths.splice(i, 1)
            removed++
            if (p.stale) stale++
          }
        }
        same(table.removeFrom(who.id, afi, staleOnly), { removed, stale }, `${where(step)}: removeFrom counts`)
      } else if (x < 82) {
        // An Adj-RIB-Out sends a destination (holds it) or withdraws one it holds.
        const keys = [...model.keys()].filter((k) => table.find(prefixOf.get(k)!) >= 0)
        if (keys.length === 0) continue
        const key = rng.pick(keys)
        const d = table.find(prefixOf.get(key)!)
        const n = holds.get(key) ?? 0
        if (n > 0 && rng.int(2) === 0) {
          table.unhold(d)
          holds.set(key, n - 1)
        } else {
          table.hold(d)
          holds.set(key, n + 1)
        }
        // An unhold frees an emptied destination only once it is settled: checked at the next flush.
      } else check(step)
    }
    // Everything goes: no path, no destination, no attribute set is left behind.
    for (const paths of model.values()) {
      for (const p of [...paths]) same(table.removePath(p.peer?.id, p.prefix), modelRemove(p.peer?.id, p.prefix), `seed ${seed}: the last removals`)
    }
    for (const [key, n] of holds) for (let i = 0; i < n; i++) table.unhold(table.find(prefixOf.get(key)!))
    holds.clear()
    check(500)
    t.equal(table.size, 0, `seed ${seed}: the table is empty`)
    t.equal(interner.size, 0, `seed ${seed}: no attribute set is referenced`)
  }
})
