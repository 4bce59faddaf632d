// The decision process, one row per step: the expected winner and the step named as the reason,
// whichever order the paths come in; then the elimination over three paths and the ECMP set.
import t from 'tap'
import { parsePrefix, type PathAttributes } from '../../../bgp/index.js'
import { decide, REASONS, type Path, type RibPeer } from '../../../bgp/rib/index.js'
import { LOCAL_AS, peer } from './helpers.js'

const ctx = { localAsn: LOCAL_AS, routerId: 0xc00002fe, defaultLocalPref: 100 }
const prefix = parsePrefix('198.18.0.0/26')
let id = 1

function path(a: PathAttributes, from: RibPeer | undefined, routerId = '10.0.0.1', pathId = 0): Path {
  return {
    prefix: { ...prefix, pathId },
    peer: from,
    session: from === undefined ? undefined : { routerId },
    attrs: { id: id++, hash: id, attrs: a, nextHop: [], refs: 1 },
    stale: false,
  }
}

const ibgpA = peer({ address: '192.0.2.1' })
const ibgpB = peer({ address: '192.0.2.2' })
const ebgpA = peer({ address: '192.0.2.3', asn: 65001 })
const ebgpB = peer({ address: '192.0.2.4', asn: 65002 })
const seq = (...asns: number[]) => ({ type: 2 as const, asns })

const rows: { name: string; winner: Path; loser: Path; reason: string }[] = [
  { name: 'our own route first, whatever the other LOCAL_PREF', winner: path({ origin: 2 }, undefined), loser: path({ localPref: 500 }, ibgpA), reason: 'local-origin' },
  { name: 'higher LOCAL_PREF', winner: path({ localPref: 200, asPath: [seq(1, 2, 3)] }, ibgpA), loser: path({ localPref: 100 }, ibgpB), reason: 'local-pref' },
  { name: 'missing LOCAL_PREF counts 100', winner: path({}, ibgpA), loser: path({ localPref: 50 }, ibgpB), reason: 'local-pref' },
  { name: 'shorter AS_PATH', winner: path({ asPath: [seq(1, 2)] }, ibgpB), loser: path({ asPath: [seq(1, 2, 3)] }, ibgpA), reason: 'as-path-length' },
  { name: 'an AS_SET counts one', winner: path({ asPath: [seq(1), { type: 1, asns: [2, 3, 4] }] }, ibgpB), loser: path({ asPath: [seq(1, 2, 3)] }, ibgpA), reason: 'as-path-length' },
  { name: 'confederation segments count none', winner: path({ asPath: [{ type: 3, asns: [9, 9, 9] }, seq(1)] }, ibgpB), loser: path({ asPath: [seq(1, 2)] }, ibgpA), reason: 'as-path-length' },
  { name: 'lower ORIGIN', winner: path({ origin: 0 }, ibgpB), loser: path({ origin: 2 }, ibgpA), reason: 'origin' },
  { name: 'lower MED from the same neighbour AS', winner: path({ asPath: [seq(65001)], med: 10 }, ibgpB), loser: path({ asPath: [seq(65001)], med: 20 }, ibgpA), reason: 'med' },
  { name: 'missing MED counts 0', winner: path({ asPath: [seq(65001)] }, ibgpB), loser: path({ asPath: [seq(65001)], med: 5 }, ibgpA), reason: 'med' },
  {
    name: 'MED ignored across neighbour ASes',
    winner: path({ asPath: [seq(65001)], med: 50 }, ebgpA),
    loser: path({ asPath: [seq(65002)], med: 10 }, ibgpA),
    reason: 'ebgp-over-ibgp',
  },
  { name: 'eBGP over iBGP', winner: path({ asPath: [seq(65001)] }, ebgpA, '10.0.0.9'), loser: path({ asPath: [seq(65001)] }, ibgpA, '10.0.0.1'), reason: 'ebgp-over-ibgp' },
  { name: 'lower router id', winner: path({}, ibgpB, '10.0.0.1'), loser: path({}, ibgpA, '10.0.0.2'), reason: 'router-id' },
  {
    name: 'ORIGINATOR_ID stands in for the router id',
    winner: path({ originatorId: '10.0.0.1' }, ibgpB, '10.0.0.9'),
    loser: path({}, ibgpA, '10.0.0.5'),
    reason: 'router-id',
  },
  {
    name: 'shorter CLUSTER_LIST',
    winner: path({ originatorId: '10.0.0.1', clusterList: ['10.1.1.1'] }, ibgpB),
    loser: path({ originatorId: '10.0.0.1', clusterList: ['10.1.1.1', '10.2.2.2'] }, ibgpA),
    reason: 'cluster-list-length',
  },
  { name: 'lower peer address', winner: path({ originatorId: '10.0.0.1' }, ibgpA), loser: path({ originatorId: '10.0.0.1' }, ibgpB), reason: 'peer-address' },
  { name: 'lower path id (add-path)', winner: path({}, ibgpA, '10.0.0.1', 1), loser: path({}, ibgpA, '10.0.0.1', 2), reason: 'path-id' },
]

t.test('one row per step, both orders', async (t) => {
  for (const r of rows) {
    for (const order of [[r.winner, r.loser], [r.loser, r.winner]] as const) {
      const d = decide(order, ctx, false)
      t.equal(d.best, r.winner, `${r.name}: winner`)
      t.equal(REASONS[d.reason], r.reason, `${r.name}: reason`)
      t.equal(d.multipath, undefined, `${r.name}: no multipath when it is off`)
    }
  }
})

t.test('a single path is the best for being the only one', async (t) => {
  const p = path({}, ibgpA)
  const d = decide([p], ctx, true)
  t.equal(d.best, p)
  t.equal(REASONS[d.reason], 'only path')
})

t.test('three paths: MED eliminates within a neighbour AS only, then the router id decides', async (t) => {
  const a = path({ asPath: [seq(1)], med: 0 }, ibgpA, '10.0.0.3')
  const b = path({ asPath: [seq(1)], med: 10 }, ibgpB, '10.0.0.1')
  const c = path({ asPath: [seq(2)], med: 5 }, ibgpB, '10.0.0.2')
  for (const order of [[a, b, c], [c, b, a], [b, c, a]]) {
    const d = decide(order, ctx, false)
    t.equal(d.best, c)
    t.equal(REASONS[d.reason], 'router-id')
  }
  // Pairwise, b would beat c on router id; the RFC's elimination removes b at the MED step first.
  t.equal(decide([b, c], ctx, false).best, b)
})

t.test('multipath: equal through eBGP/iBGP and from the same neighbour AS', async (t) => {
  const a = path({ asPath: [seq(65001, 7)] }, ebgpA, '10.0.0.1')
  const b = path({ asPath: [seq(65001, 8)] }, ebgpB, '10.0.0.2')
  const other = path({ asPath: [seq(65009, 8)] }, ebgpB, '10.0.0.0')
  const worse = path({ asPath: [seq(65001, 8, 9)] }, ebgpB, '10.0.0.0')
  const ibgp = path({ asPath: [seq(65001, 8)] }, ibgpA, '10.0.0.0')
  const cases: { paths: Path[]; best: Path; multipath: Path[] | undefined }[] = [
    { paths: [a, b], best: a, multipath: [a, b] },
    { paths: [b, a], best: a, multipath: [a, b] },
    { paths: [a, other], best: other, multipath: undefined },
    { paths: [a, worse], best: a, multipath: undefined },
    { paths: [a, ibgp], best: a, multipath: undefined },
    { paths: [ibgp, worse, b, a], best: a, multipath: [a, b] },
  ]
  for (const c of cases) {
    const d = decide(c.paths, ctx, true)
    t.equal(d.best, c.best)
    t.same(d.multipath, c.multipath)
  }
})
