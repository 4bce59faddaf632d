// An update group's rounds while routes pour in: a paced group makes one round of the changes that arrive
// within its spacing (a lone change after a quiet spell goes at once), and a peer joining a group with
// changes queued is sent the members' table and those changes in the next round, making no round itself.
import t from 'tap'
import { formatPrefix } from '../../../bgp/index.js'
import type { AdjRibOut, OutBatch, RoundPacing } from '../../../bgp/rib/index.js'
import { attrs, peer, px, rib, session } from './helpers.js'

const CLUSTER = '10.1.1.1'

/** A clock the test moves, and the wake-ups the group asked for. */
function manualPacing(perMember: number, max: number): RoundPacing & { time: number; wakeups: { at: number; fn: () => void }[]; advance(ms: number): void } {
  const p = {
    perMember,
    max,
    time: 0,
    wakeups: [] as { at: number; fn: () => void }[],
    now: () => p.time,
    later: (fn: () => void, ms: number) => void p.wakeups.push({ at: p.time + ms, fn }),
    advance(ms: number): void {
      p.time += ms
      const due = p.wakeups.filter((w) => w.at <= p.time)
      p.wakeups = p.wakeups.filter((w) => w.at > p.time)
      for (const w of due) w.fn()
    },
  }
  return p
}

function take(out: AdjRibOut): OutBatch[] {
  const all: OutBatch[] = []
  for (let i = 0; out.pending > 0 && i < 100; i++) {
    const got = out.take(4000)
    if (got.length === 0) break
    all.push(...got)
  }
  return all
}

const announced = (batches: readonly OutBatch[]): string[] => batches.flatMap((b) => b.announce.map(formatPrefix)).sort()

t.test('changes within a paced group\'s spacing go in one round; a change after a quiet spell at once', async (t) => {
  const pacing = manualPacing(10, 1000)
  const r = rib({ clusterId: CLUSTER, pacing })
  const clients = ['192.0.2.1', '192.0.2.2', '192.0.2.3'].map((address) => peer({ address, rrClient: true }))
  const outs = clients.map((c) => r.attachPeer(c))
  const src = peer({ address: '192.0.2.9', rrClient: true })
  const srcOut = r.attachPeer(src)
  let signals = 0
  outs[1]!.onPending(() => signals++)

  r.receive(src, session('10.0.0.9'), [px('198.18.0.0/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  const first = take(outs[0]!)
  t.same(announced(first), ['198.18.0.0/26'], 'the first change goes at once')
  const rounds = r.groupRounds
  t.same(take(outs[1]!), first, 'the other members are handed the same batches')
  take(outs[2]!)
  take(srcOut)

  // 4 members x 10 ms: a spacing of 40 ms, and 160 ms while changes keep coming.
  pacing.advance(5)
  r.receive(src, session('10.0.0.9'), [px('198.18.0.64/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  t.same(take(outs[0]!), [], 'a change within a spacing of the last round is not sent yet')
  t.ok(outs[0]!.pending > 0, 'it is still pending, so End-of-RIB waits for it')
  pacing.advance(20)
  r.receive(src, session('10.0.0.9'), [px('198.18.0.128/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  pacing.advance(15)
  t.same(announced(take(outs[1]!)), ['198.18.0.128/26', '198.18.0.64/26'], 'a few changes go one spacing after the last round')
  t.equal(r.groupRounds, rounds + 1, 'one round for the two changes')
  t.same(announced(take(outs[0]!)), ['198.18.0.128/26', '198.18.0.64/26'])
  t.same(announced(take(outs[2]!)), ['198.18.0.128/26', '198.18.0.64/26'])
  take(srcOut)

  // Routes pouring in (a cold start): the queue refilled within a spacing, with many waiting.
  const many = Array.from({ length: 40 }, (_, i) => px(`198.18.2.${i * 4}/30`))
  pacing.advance(5)
  r.receive(src, session('10.0.0.9'), many, attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  pacing.advance(40)
  t.same(take(outs[1]!), [], 'routes keep coming: one spacing after the last round is not enough')
  const before = signals
  pacing.advance(120)
  t.ok(signals > before, 'the members are told when the round may be made')
  t.equal(take(outs[1]!).flatMap((b) => b.announce).length, 40, 'all of them in one round, four spacings on')
  t.equal(r.groupRounds, rounds + 2, 'one round for the forty')
  for (const o of [outs[0]!, outs[2]!, srcOut]) take(o)

  // A change more than a spacing after the last round goes at once, as the one-change bench sends them.
  pacing.advance(50)
  r.receive(src, session('10.0.0.9'), [px('198.18.1.0/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  t.same(announced(take(outs[0]!)), ['198.18.1.0/26'], 'a change 50 ms after the last round goes at once')
  for (const o of [outs[1]!, outs[2]!, srcOut]) take(o)
  t.equal(r.groupRounds, rounds + 3)

  pacing.advance(1000)
  r.receive(src, session('10.0.0.9'), [px('198.18.0.192/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  t.same(announced(take(outs[2]!)), ['198.18.0.192/26'], 'after a quiet spell a change goes at once')
  t.equal(r.groupRounds, rounds + 4)
  for (const o of [outs[0]!, outs[1]!, srcOut]) take(o)

  // No member has joined or left for three spacings: the group is settled, few changes wait a quarter spacing.
  pacing.advance(15)
  r.receive(src, session('10.0.0.9'), [px('198.18.3.0/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  t.same(announced(take(outs[0]!)), ['198.18.3.0/26'], 'settled: a change 15 ms after the last round goes at once')
  for (const o of [outs[1]!, outs[2]!, srcOut]) take(o)
  pacing.advance(5)
  r.receive(src, session('10.0.0.9'), [px('198.18.3.64/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  t.same(take(outs[0]!), [], 'settled: a change 5 ms after the last round waits')
  pacing.advance(5)
  t.same(announced(take(outs[0]!)), ['198.18.3.64/26'], 'a quarter spacing (10 ms) after the last round it goes')
  for (const o of [outs[1]!, outs[2]!, srcOut]) take(o)
  t.equal(r.groupRounds, rounds + 6)

  // A member joining unsettles the group: a full spacing again.
  const late = r.attachPeer(peer({ address: '192.0.2.4', rrClient: true }))
  take(late)
  pacing.advance(15)
  r.receive(src, session('10.0.0.9'), [px('198.18.3.128/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  t.same(take(outs[0]!), [], 'after a join: a change 15 ms after the last round waits')
  pacing.advance(40)
  t.same(announced(take(outs[0]!)), ['198.18.3.128/26'], 'and goes a spacing (5 members: 50 ms) after it')
  for (const o of [outs[1]!, outs[2]!, srcOut, late]) take(o)

  // Three spacings (150 ms) after the join the group is settled again.
  pacing.advance(85)
  r.receive(src, session('10.0.0.9'), [px('198.18.3.192/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  t.same(announced(take(outs[0]!)), ['198.18.3.192/26'], '140 ms after the join, a spacing after the last round: at once')
  for (const o of [outs[1]!, outs[2]!, srcOut, late]) take(o)
  pacing.advance(20)
  r.receive(src, session('10.0.0.9'), [px('198.18.4.0/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  t.same(announced(take(outs[0]!)), ['198.18.4.0/26'], '160 ms after the join the group is settled: a change 20 ms after the last round goes at once')
})

t.test('a peer joining a group with changes queued makes no round and is sent them with the next', async (t) => {
  const r = rib({ clusterId: CLUSTER })
  const a = peer({ address: '192.0.2.1', rrClient: true })
  const b = peer({ address: '192.0.2.2', rrClient: true })
  const src = peer({ address: '192.0.2.9', rrClient: true })
  r.attachPeer(src)
  const outA = r.attachPeer(a)
  for (const p of ['198.18.0.0/26', '198.18.0.64/26', '198.18.0.128/26']) r.receive(src, session('10.0.0.9'), [px(p)], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  take(outA)
  // The group's dump is kept from the first join on; a second joiner is what the cold start has thousands of.
  const early = r.attachPeer(peer({ address: '192.0.2.5', rrClient: true }))
  take(early)
  // Queued, not sent yet: one path replaced, one withdrawn, one new.
  r.receive(src, session('10.0.0.9'), [px('198.18.0.0/26')], attrs({ nextHop: '192.0.2.9', med: 5 }))
  r.receive(src, session('10.0.0.9'), [px('198.18.0.64/26')], undefined)
  r.receive(src, session('10.0.0.9'), [px('198.18.1.0/26')], attrs({ nextHop: '192.0.2.9' }))
  r.flush()
  const rounds = r.groupRounds
  const outB = r.attachPeer(b)
  t.equal(r.groupRounds, rounds, 'the join made no round')
  t.equal(outB.size, 1, 'it holds the table less the destinations queued since (198.18.0.0/26 and .64/26)')
  const held = new Map<string, string>()
  const withdrawnUnheld: string[] = []
  for (const batch of take(outB)) {
    for (const p of batch.withdraw) if (!held.delete(formatPrefix(p))) withdrawnUnheld.push(formatPrefix(p))
    for (const p of batch.announce) held.set(formatPrefix(p), JSON.stringify(batch.attributes?.med ?? null))
  }
  t.same(withdrawnUnheld, [], 'never a withdrawal of what it was not sent')
  t.same([...held.keys()].sort(), ['198.18.0.0/26', '198.18.0.128/26', '198.18.1.0/26'], 'the Loc-RIB as it is')
  t.equal(held.get('198.18.0.0/26'), '5', 'the replaced path as it is now')
  t.equal(outB.size, 3)
  const heldA = announced(take(outA))
  t.same(heldA, ['198.18.0.0/26', '198.18.1.0/26'], 'the member before it is sent the changes')
})
