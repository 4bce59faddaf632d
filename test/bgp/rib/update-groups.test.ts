// Update groups against Adj-RIB-Outs of their own: reflector clients in one group are sent, step by step,
// what each would be sent alone (never its own routes back, a withdrawal where its own path replaced
// another's), with a member that reads nothing for a while, one that joins mid-stream, one that reads a
// few prefixes at a time and one that asks for a route refresh; and the members share one set of batches.
import t from 'tap'
import { formatPrefix, type Prefix } from '../../../bgp/index.js'
import type { AdjRibOut, OutBatch, RibPeer } from '../../../bgp/rib/index.js'
import { Rng } from '../../harness/random.js'
import { attrs, peer, px, rib, session } from './helpers.js'

const CLUSTER = '10.1.1.1'
const PREFIXES = Array.from({ length: 14 }, (_, i) => px(`198.18.${i}.0/26`))

/** What a client holds after applying the UPDATEs it was sent: prefix to attributes and next hop. */
type Held = Map<string, string>

/** A step's UPDATEs as text, in a stable order; errors for a withdrawal of what the client did not hold. */
function apply(held: Held, batches: readonly OutBatch[], errors: string[], who: string): string[] {
  const seen: string[] = []
  for (const b of batches) {
    for (const p of b.withdraw) {
      const k = formatPrefix(p)
      if (!held.delete(k)) errors.push(`${who}: withdrawal of ${k}, which it did not hold`)
      seen.push(`-${k}`)
    }
    for (const p of b.announce) {
      const k = formatPrefix(p)
      const v = JSON.stringify([b.attributes, b.nextHop ?? []])
      held.set(k, v)
      seen.push(`+${k} ${v}`)
    }
  }
  return seen.sort()
}

/** Takes everything pending, `max` prefixes at a time. */
function drain(out: AdjRibOut, max = 4000): OutBatch[] {
  const all: OutBatch[] = []
  for (let i = 0; out.pending > 0 && i < 10_000; i++) all.push(...out.take(max))
  return all
}

/** Whether the Adj-RIB-Out sends as a member of its update group now. */
function isGrouped(out: AdjRibOut): boolean {
  return (out as AdjRibOut & { grouped?: boolean }).grouped === true
}

interface Client {
  readonly peer: RibPeer
  readonly routerId: string
  grouped?: AdjRibOut
  alone?: AdjRibOut
  readonly heldGrouped: Held
  readonly heldAlone: Held
}

function run(t: Tap.Test, seed: number, slowLimit: number): { errors: string[]; leftGroup: Set<string>; sharedBatches: number; grouped: Map<string, boolean> } {
  const rng = new Rng(seed)
  const groupedRib = rib({ clusterId: CLUSTER, slowLimit })
  const aloneRib = rib({ clusterId: CLUSTER, updateGroups: false })
  const clients: Client[] = ['a', 'b', 'c', 'partial', 'slow', 'joiner', 'refresher', 'late'].map((name, i) => ({
    peer: peer({ address: `192.0.2.${i + 1}`, name, rrClient: true }),
    routerId: `10.0.0.${i + 1}`,
    heldGrouped: new Map(),
    heldAlone: new Map(),
  }))
  const nonClient = peer({ address: '192.0.2.100', name: 'non-client' })
  const errors: string[] = []
  const leftGroup = new Set<string>()
  const grouped = new Map<string, boolean>()
  let sharedBatches = 0
  const attach = (c: Client): void => {
    c.grouped = groupedRib.attachPeer(c.peer)
    c.alone = aloneRib.attachPeer(c.peer)
  }
  /** Who joins mid-stream, at which step: the second is sent the group's table as it kept it since the first. */
  const joins = new Map([['joiner', 15], ['late', 45]])
  for (const c of clients) if (!joins.has(c.peer.name)) attach(c)
  const nonClientOut = [groupedRib.attachPeer(nonClient), aloneRib.attachPeer(nonClient)] as const
  const sources = [...clients, { peer: nonClient, routerId: '10.0.0.100' }]

  for (let step = 0; step < 60; step++) {
    // One flush of changes: announcements and withdrawals from clients, the non-client and ourselves.
    for (let n = 1 + rng.int(4); n > 0; n--) {
      const prefix: Prefix = rng.pick(PREFIXES)
      const op = rng.int(10)
      const src = rng.pick(sources)
      const med = rng.int(3)
      for (const r of [groupedRib, aloneRib]) {
        if (op < 6) r.receive(src.peer, session(src.routerId), [prefix], attrs({ med, nextHop: src.peer.address }))
        else if (op < 9) r.receive(src.peer, session(src.routerId), [prefix], undefined)
        else r.originate(prefix, { med: 7 })
      }
    }
    groupedRib.flush()
    aloneRib.flush()
    for (const c of clients) if (joins.get(c.peer.name) === step) attach(c)
    if (step === 30) {
      const c = clients.find((x) => x.peer.name === 'refresher')!
      c.grouped!.refresh()
      c.alone!.refresh()
      if (!isGrouped(c.grouped!)) leftGroup.add(c.peer.name)
    }
    const stepBatches = new Map<string, OutBatch[]>()
    // In a new order each step: whoever reads first makes the group's round for the others.
    // When one catches up on its own (joins, comes back, refreshes), it reads first: it rejoins a group
    // that has a round still to make, of changes it has just been sent.
    const first = ['joiner', 'late', 'slow', 'refresher']
    const order = [...clients].sort(() => rng.int(3) - 1).sort((x, y) => (step % 5 === 0 ? first.indexOf(y.peer.name) - first.indexOf(x.peer.name) : 0))
    for (const c of order) {
      if (c.grouped === undefined || c.alone === undefined) continue
      const name = c.peer.name
      const aloneSeen = apply(c.heldAlone, drain(c.alone), errors, `${name} alone`)
      // The slow member reads nothing for steps 5-24; the partial one two prefixes per step.
      if (name === 'slow' && step >= 5 && step < 25) continue
      const batches = name === 'partial' ? c.grouped.take(2) : drain(c.grouped)
      stepBatches.set(name, batches)
      const seen = apply(c.heldGrouped, batches, errors, `${name} grouped`)
      if (c.grouped.pending > 0) continue
      if (name !== 'partial' && name !== 'slow' && JSON.stringify(seen) !== JSON.stringify(aloneSeen)) {
        errors.push(`step ${step}: ${name} was sent ${JSON.stringify(seen)}, alone ${JSON.stringify(aloneSeen)}`)
      }
      if (JSON.stringify([...c.heldGrouped].sort()) !== JSON.stringify([...c.heldAlone].sort())) {
        errors.push(`step ${step}: ${name} holds ${JSON.stringify([...c.heldGrouped].sort())}, alone ${JSON.stringify([...c.heldAlone].sort())}`)
      }
    }
    for (const c of clients) if (c.grouped !== undefined && !isGrouped(c.grouped)) leftGroup.add(c.peer.name)
    const a = stepBatches.get('a') ?? []
    const b = stepBatches.get('b') ?? []
    sharedBatches += a.filter((x) => b.includes(x)).length
    drain(nonClientOut[0])
    drain(nonClientOut[1])
  }
  for (const c of clients) {
    apply(c.heldGrouped, drain(c.grouped!), errors, `${c.peer.name} grouped`)
    apply(c.heldAlone, drain(c.alone!), errors, `${c.peer.name} alone`)
    if (JSON.stringify([...c.heldGrouped].sort()) !== JSON.stringify([...c.heldAlone].sort())) errors.push(`end: ${c.peer.name} differs from alone`)
    // Own routes never come back to their source.
    for (const k of c.heldGrouped.keys()) {
      const best = groupedRib.best(px(k))
      if (best?.path.peer?.id === c.peer.id) errors.push(`end: ${c.peer.name} holds its own ${k}`)
    }
    grouped.set(c.peer.name, isGrouped(c.grouped!))
    t.equal(c.grouped!.size, c.alone!.size, `${c.peer.name}: advertised count as alone`)
    t.same([...c.grouped!.entries()].map((e) => formatPrefix(e.prefix)).sort(), [...c.alone!.entries()].map((e) => formatPrefix(e.prefix)).sort(), `${c.peer.name}: entries as alone`)
  }
  return { errors, leftGroup, sharedBatches, grouped }
}

t.test('a group\'s members are sent what each would be sent alone', async (t) => {
  for (const seed of [1, 7, 42, 1234, 99991]) {
    const r = run(t, seed, 3)
    t.same(r.errors, [], `seed ${seed}: no member differs from itself alone`)
    t.ok(r.leftGroup.has('slow'), `seed ${seed}: the member that read nothing left its group`)
    t.ok(r.leftGroup.has('refresher'), `seed ${seed}: a refresh is sent on its own`)
    t.ok(r.sharedBatches > 0, `seed ${seed}: members shared batches (${r.sharedBatches})`)
    t.same([...r.grouped].filter(([, g]) => !g), [], `seed ${seed}: everyone is back in a group at the end`)
  }
})

t.test('with a limit no member reaches, no one leaves its group but the refresh', async (t) => {
  const r = run(t, 5, 1_000_000)
  t.same(r.errors, [])
  t.notOk(r.leftGroup.has('slow'), 'the slow member caught up inside its group')
})

t.test('a peer joining with changes queued: no withdrawal of what it was never sent, the others\' batches for the rest', async (t) => {
  const r = rib({ clusterId: CLUSTER })
  const [a, b, src] = ['a', 'b', 'src'].map((name, i) => peer({ address: `192.0.2.${i + 1}`, name, rrClient: true }))
  const outA = r.attachPeer(a!)
  const outSrc = r.attachPeer(src!)
  for (const p of ['198.18.0.0/26', '198.18.1.0/26']) r.receive(src!, session('10.0.0.3'), [px(p)], attrs({ nextHop: '192.0.2.3' }))
  r.flush()
  drain(outA)
  drain(outSrc)
  // A first joiner: the group keeps its table as a dump from now on.
  drain(r.attachPeer(peer({ address: '192.0.2.5', name: 'early', rrClient: true })))
  // Queued, not yet a round: 198.18.0.0/26 withdrawn, 198.18.1.0/26 changed. The joiner is sent neither
  // in its dump; the round then withdraws one and announces the other.
  r.receive(src!, session('10.0.0.3'), [px('198.18.0.0/26')], undefined)
  r.receive(src!, session('10.0.0.3'), [px('198.18.1.0/26')], attrs({ med: 5, nextHop: '192.0.2.3' }))
  r.flush()
  const outB = r.attachPeer(b!)
  const heldB: Held = new Map()
  const errors: string[] = []
  const sentA = drain(outA)
  const sentB = drain(outB)
  apply(heldB, sentB, errors, 'b')
  t.same(errors, [], 'b is sent no withdrawal of a prefix it never held')
  t.same([...heldB.keys()], ['198.18.1.0/26'], 'b holds the changed prefix')
  t.ok(sentA.some((x) => x.withdraw.length === 1), 'a is sent the withdrawal')

  // A joiner missing a changed prefix, then a round of announcements only: it is handed the shared batches.
  const c = peer({ address: '192.0.2.4', name: 'c', rrClient: true })
  r.receive(src!, session('10.0.0.3'), [px('198.18.2.0/26')], attrs({ nextHop: '192.0.2.3' }))
  r.receive(src!, session('10.0.0.3'), [px('198.18.1.0/26')], attrs({ med: 6, nextHop: '192.0.2.3' }))
  r.flush()
  const outC = r.attachPeer(c)
  r.receive(src!, session('10.0.0.3'), [px('198.18.3.0/26')], attrs({ nextHop: '192.0.2.3' }))
  r.flush()
  const roundA = drain(outA)
  const roundC = drain(outC)
  const heldC: Held = new Map()
  apply(heldC, roundC, errors, 'c')
  t.same(errors, [])
  t.same([...heldC.keys()].sort(), ['198.18.1.0/26', '198.18.2.0/26', '198.18.3.0/26'], 'c holds the table and the new prefix')
  const last = roundC.at(-1)
  t.ok(last !== undefined && roundA.includes(last), 'c is handed the same batch object as a for the round')
})
