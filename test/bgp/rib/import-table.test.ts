// The import table (routes as received, before import policy, for a peer without route refresh) and
// re-running import over it: the per-prefix decision as a table, the store's bookkeeping, and the RIB
// operations a policy change makes (announce, withdraw, update) with withdrawals, session down and
// graceful restart keeping the table right.
import t from 'tap'
import { formatPrefix, type PathAttributes, type Prefix } from '../../../bgp/index.js'
import { AttributeInterner } from '../../../bgp/codec/intern.js'
import { ImportTable, reimportOp, type LocRibChange, type Policy, type RibPeer } from '../../../bgp/rib/index.js'
import { attrs, peer, px, rib, session } from './helpers.js'

t.test('reimportOp: the held verdict against the new one', async (t) => {
  const a = attrs({ asns: [65001] })
  const rows: { name: string; held: PathAttributes | undefined; next: PathAttributes | undefined; op: string }[] = [
    { name: 'rejected before and now', held: undefined, next: undefined, op: 'keep' },
    { name: 'rejected before, accepted now', held: undefined, next: a, op: 'announce' },
    { name: 'accepted before, rejected now', held: a, next: undefined, op: 'withdraw' },
    { name: 'accepted, same attributes', held: a, next: { ...a }, op: 'keep' },
    { name: 'accepted, attributes changed', held: a, next: { ...a, med: 5 }, op: 'update' },
  ]
  for (const r of rows) t.equal(reimportOp(r.held, r.next), r.op, r.name)
})

t.test('the table: set, replace, delete, clear, one reference per prefix', async (t) => {
  const interner = new AttributeInterner()
  const table = new ImportTable(interner)
  const one = interner.intern(attrs({ asns: [65001] }))
  const two = interner.intern(attrs({ asns: [65002] }))
  const prefixes = [px('198.18.0.0/24'), px('198.18.1.0/24'), px('198.18.0.0/25'), px('2001:db8:1::/64'), px('198.18.2.0/24', 7)]
  for (const p of prefixes) table.set(p, one)
  t.equal(table.size, 5)
  t.equal(one.refs, 6, 'the caller holds one, the table one per prefix')
  table.set(px('198.18.1.0/24'), two)
  table.set(px('2001:db8:1::/64'), two)
  t.equal(table.size, 5, 'replacing keeps the size')
  t.equal(one.refs, 4)
  t.equal(table.get(px('198.18.1.0/24')), two)
  t.equal(table.get(px('198.18.0.0/25')), one, 'another length is another prefix')
  t.equal(table.get(px('198.18.2.0/24')), undefined, 'path id 7 only')
  t.equal(table.get(px('198.18.2.0/24', 7)), one)
  table.delete(px('198.18.0.0/24'))
  table.delete(px('198.18.9.0/24'))
  t.equal(table.size, 4)
  t.same([...table.entries()].map(([p, a]) => `${formatPrefix(p)}#${p.pathId} ${a === one ? 'one' : 'two'}`).sort(), [
    '198.18.0.0/25#0 one',
    '198.18.1.0/24#0 two',
    '198.18.2.0/24#7 one',
    '2001:db8:1::/64#0 two',
  ])
  // A freed slot serves the next prefix.
  table.set(px('198.18.3.0/24'), two)
  t.equal(table.get(px('198.18.3.0/24')), two)
  t.equal(table.get(px('198.18.0.0/24')), undefined)
  interner.release(one)
  interner.release(two)
  table.clear()
  t.equal(table.size, 0)
  t.equal(interner.size, 0, 'every set given back')
})

t.test('the table grows past its first columns', async (t) => {
  const interner = new AttributeInterner()
  const table = new ImportTable(interner)
  const a = interner.intern(attrs())
  for (let i = 0; i < 5000; i++) table.set({ afi: 1, addr: (0xc6120000 + i * 256) >>> 0, len: 24, pathId: 0 }, a)
  t.equal(table.size, 5000)
  t.equal(table.get({ afi: 1, addr: (0xc6120000 + 4321 * 256) >>> 0, len: 24, pathId: 0 }), a)
  t.equal([...table.entries()].length, 5000)
})

/** A policy read through a holder, as the session's RibPeer reads the live configuration. */
function switchable(initial: Policy): { peer: RibPeer; set(p: Policy): void } {
  let current = initial
  const base = peer({ address: '192.0.2.3', asn: 65001, importTable: true })
  const { importPolicy: _drop, ...rest } = base
  const p: RibPeer = {
    ...rest,
    get importPolicy() {
      return current
    },
  }
  return { peer: p, set: (x) => (current = x) }
}

function rejecting(...texts: string[]): Policy {
  const out = new Set(texts)
  return { empty: false, apply: (prefix, a) => (out.has(formatPrefix(prefix)) ? undefined : a) }
}

const bestOf = (r: ReturnType<typeof rib>, text: string): PathAttributes | undefined => r.best(px(text))?.path.attrs.attrs

t.test('re-import: newly accepted appear, newly rejected go, changed attributes replaced, in one flush', async (t) => {
  const s = switchable(rejecting('198.18.1.0/24'))
  const r = rib()
  const changes: LocRibChange[][] = []
  r.subscribe((c) => changes.push([...c]))
  const a = attrs({ asns: [65001] })
  const prefixes = ['198.18.0.0/24', '198.18.1.0/24', '198.18.2.0/24', '198.18.3.0/24'].map((x) => px(x))
  r.receive(s.peer, session('10.0.0.3'), prefixes, a)
  r.flush()
  t.equal(bestOf(r, '198.18.1.0/24'), undefined, 'rejected by the first policy')
  t.same(r.counts(s.peer), { received: 4, accepted: 3, importTable: 4 })
  changes.length = 0
  s.set({ empty: false, apply: (prefix, x) => (formatPrefix(prefix) === '198.18.2.0/24' ? undefined : formatPrefix(prefix) === '198.18.3.0/24' ? { ...x, med: 7 } : x) })
  t.same(r.reimport(s.peer), { announced: 1, withdrawn: 1, updated: 1 })
  r.flush()
  t.equal(changes.length, 1, 'one flush')
  t.same(
    changes[0]!.map((c) => `${formatPrefix(c.prefix)} ${c.best === undefined ? 'gone' : c.previous === undefined ? 'new' : 'changed'}`).sort(),
    ['198.18.1.0/24 new', '198.18.2.0/24 gone', '198.18.3.0/24 changed'],
  )
  t.equal(bestOf(r, '198.18.3.0/24')?.med, 7)
  t.equal(bestOf(r, '198.18.0.0/24')?.med, undefined, 'unchanged verdicts untouched')
  t.same(r.counts(s.peer), { received: 4, accepted: 3, importTable: 4 })
  t.same(r.reimport(s.peer), { announced: 0, withdrawn: 0, updated: 0 }, 'again with the same policy: nothing')
  r.peerDown(s.peer, new Set())
  r.flush()
  t.equal(r.attributeSets, 0, 'the changed and the kept sets all given back once the session is down')
})

t.test('withdrawals and refused sections leave the table; RFC 8212 refusals stay for a policy to come', async (t) => {
  const empty: Policy = { empty: true, apply: () => undefined }
  const s = switchable(empty)
  const r = rib()
  r.receive(s.peer, session('10.0.0.3'), [px('198.18.0.0/24'), px('198.18.1.0/24')], attrs({ asns: [65001] }))
  r.flush()
  t.equal(r.counts(s.peer).accepted, 0, 'RFC 8212: nothing without a policy')
  t.equal(r.counts(s.peer).importTable, 2, 'but kept as received')
  r.receive(s.peer, session('10.0.0.3'), [px('198.18.1.0/24')], undefined)
  r.receive(s.peer, session('10.0.0.3'), [px('198.18.5.0/24')], attrs({ asns: [3356] }))
  t.equal(r.counts(s.peer).importTable, 1, 'withdrawn and invalid (first AS) are not kept')
  s.set(rejecting())
  t.same(r.reimport(s.peer), { announced: 1, withdrawn: 0, updated: 0 })
  r.flush()
  t.ok(bestOf(r, '198.18.0.0/24'), 'the policy brought it in')
  t.equal(bestOf(r, '198.18.1.0/24'), undefined)
})

t.test('a peer with route refresh keeps no table and re-import does nothing', async (t) => {
  let current: Policy = rejecting('198.18.1.0/24')
  const base = peer({ address: '192.0.2.4', asn: 65001 })
  const { importPolicy: _drop, ...rest } = base
  const p: RibPeer = { ...rest, get importPolicy() { return current } }
  const r = rib()
  r.receive(p, session('10.0.0.4'), [px('198.18.0.0/24'), px('198.18.1.0/24')], attrs({ asns: [65001] }))
  r.flush()
  current = rejecting()
  t.same(r.reimport(p), { announced: 0, withdrawn: 0, updated: 0 })
  t.same(r.counts(p), { received: 2, accepted: 1 }, 'no importTable count')
})

t.test('session down clears the table; graceful restart keeps stale paths, the new session refills it', async (t) => {
  const s = switchable(rejecting('198.18.1.0/24'))
  const r = rib()
  const all = ['198.18.0.0/24', '198.18.1.0/24', '198.18.2.0/24'].map((x) => px(x))
  r.receive(s.peer, session('10.0.0.3'), all, attrs({ asns: [65001] }))
  r.flush()
  r.peerDown(s.peer, new Set())
  r.flush()
  t.same(r.counts(s.peer), { received: 0, accepted: 0, importTable: 0 })
  t.equal(r.size, 0)
  t.equal(r.attributeSets, 0, 'every attribute set given back')

  r.receive(s.peer, session('10.0.0.3'), all, attrs({ asns: [65001] }))
  r.flush()
  r.peerDown(s.peer, new Set([0x0101]))
  r.flush()
  t.equal(r.best(px('198.18.0.0/24'))?.path.stale, true, 'kept stale')
  t.equal(r.counts(s.peer).importTable, 0, 'what the old session sent is not re-imported')
  // The peer is back and re-sends one of its routes; a policy change meanwhile re-imports what it re-sent.
  r.receive(s.peer, session('10.0.0.33'), [px('198.18.1.0/24')], attrs({ asns: [65001] }))
  s.set(rejecting())
  t.same(r.reimport(s.peer), { announced: 1, withdrawn: 0, updated: 0 })
  r.flush()
  t.equal(r.best(px('198.18.1.0/24'))?.path.stale, false)
  r.endOfRib(s.peer, 0x0101)
  r.flush()
  t.same([...r.locRib()].map(([p]) => formatPrefix(p)), ['198.18.1.0/24'], 'End-of-RIB swept the stale ones')
  t.same(r.counts(s.peer), { received: 1, accepted: 1, importTable: 1 })
})

t.test('a table dump as columns is kept too', async (t) => {
  const s = switchable(rejecting())
  const r = rib()
  const n = 300
  const addr = new Int32Array(n)
  const len = new Uint8Array(n).fill(24)
  for (let i = 0; i < n; i++) addr[i] = (0xc6120000 + i * 256) | 0
  r.receiveIpv4(s.peer, session('10.0.0.3'), { count: n, addr, len }, attrs({ asns: [65001] }))
  r.flush()
  t.same(r.counts(s.peer), { received: n, accepted: n, importTable: n })
  s.set(rejecting('198.18.0.0/24'))
  t.same(r.reimport(s.peer), { announced: 0, withdrawn: 1, updated: 0 })
  r.flush()
  t.equal(r.counts(s.peer).accepted, n - 1)
  const p: Prefix = px('198.18.0.0/24')
  t.equal(r.best(p), undefined)
})
