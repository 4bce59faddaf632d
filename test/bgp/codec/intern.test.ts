// The interner finds sets by a numeric hash and compares them field by field; what it calls equal must
// be exactly what has one canonical encoding (attributesKey). Checked over every pair of a few thousand
// sets drawn from values that differ only in ways the encoding ignores (leading zeros, hex case, empty
// lists, AS4_PATH, the order of unknown attributes) or does not.
import t from 'tap'
import { AttributeInterner, attributesEqual, attributesHash, attributesKey, type PathAttributes } from '../../../bgp/index.js'
import { Rng } from '../../harness/random.js'

const u = (code: number, flags: number, ...value: number[]): { code: number; flags: number; value: Uint8Array } => ({ code, flags, value: Uint8Array.from(value) })

const CHOICES: { readonly [K in keyof PathAttributes]-?: readonly (PathAttributes[K] | undefined)[] } = {
  origin: [undefined, 0, 2],
  asPath: [undefined, [], [{ type: 2, asns: [1, 2] }], [{ type: 2, asns: [1] }, { type: 1, asns: [2] }], [{ type: 1, asns: [1, 2] }]],
  nextHop: [undefined, '192.0.2.1', '192.000.2.1', '192.0.2.2'],
  med: [undefined, 0, 5],
  localPref: [undefined, 100],
  atomicAggregate: [undefined, true, false],
  aggregator: [undefined, { asn: 1, address: '10.0.0.1' }, { asn: 1, address: '10.000.0.1' }, { asn: 2, address: '10.0.0.1' }],
  communities: [undefined, [], [1], [1, 2], [2, 1]],
  originatorId: [undefined, '10.0.0.1', '10.0.0.01'],
  clusterList: [undefined, [], ['10.0.0.1'], ['10.0.0.1', '10.0.0.2']],
  extCommunities: [undefined, [], ['0002fde800000001'], ['0002FDE800000001']],
  as4Path: [undefined, [{ type: 2, asns: [7] }]],
  as4Aggregator: [undefined, { asn: 70000, address: '10.0.0.9' }],
  largeCommunities: [undefined, [], [[1, 2, 3]], [[1, 2, 4]]],
  unknown: [undefined, [], [u(99, 0xe0, 1)], [u(98, 0xc0, 2), u(99, 0xe0, 1)], [u(99, 0xe0, 1), u(98, 0xc0, 2)], [u(99, 0xf0, 1)], [u(99, 0xe0, 2)]],
}

function draw(rnd: () => number): PathAttributes {
  const out: Record<string, unknown> = {}
  for (const [k, values] of Object.entries(CHOICES)) {
    // Most fields absent most of the time, so equal sets come up often.
    if (rnd() < 0.6) continue
    const v = values[Math.floor(rnd() * values.length)]
    if (v !== undefined) out[k] = v
  }
  return out
}

t.test('equal by fields exactly when equal by canonical encoding; equal sets hash equal', async (t) => {
  const rng = new Rng(20261129)
  const rnd = (): number => rng.float()
  const sets = Array.from({ length: 1500 }, () => draw(rnd))
  const keys = sets.map((s) => attributesKey(s))
  const hashes = sets.map((s) => attributesHash(s, []))
  let equalPairs = 0
  let wrong = 0
  for (let i = 0; i < sets.length; i++) {
    for (let j = i; j < sets.length; j++) {
      const byKey = keys[i] === keys[j]
      const byFields = attributesEqual(sets[i]!, sets[j]!)
      if (byKey) equalPairs++
      if (byKey !== byFields || (byKey && hashes[i] !== hashes[j])) {
        if (wrong++ < 5) t.fail(`${JSON.stringify(sets[i])} vs ${JSON.stringify(sets[j])}: key ${byKey}, fields ${byFields}, hashes ${hashes[i]} ${hashes[j]}`)
      }
    }
  }
  t.equal(wrong, 0, 'no pair disagrees')
  t.ok(equalPairs - sets.length > 500, `equal pairs besides each with itself occur (${equalPairs - sets.length})`)
  t.ok(new Set(hashes).size > new Set(keys).size * 0.9, 'distinct sets mostly hash apart')
})

t.test('the interner shares one copy per canonical set and forgets it at the last release', async (t) => {
  const rng = new Rng(7)
  const rnd = (): number => rng.float()
  const interner = new AttributeInterner()
  const byKey = new Map<string, ReturnType<AttributeInterner['intern']>>()
  const held: ReturnType<AttributeInterner['intern']>[] = []
  let maxId = 0
  let peak = 0
  for (let i = 0; i < 3000; i++) {
    const s = draw(rnd)
    const hops = rnd() < 0.2 ? ['2001:db8::1'] : []
    const e = interner.intern(s, hops)
    const key = attributesKey(s, hops)
    const known = byKey.get(key)
    if (known !== undefined && known.refs > 0) t.equal(e, known, 'the same copy for the same canonical set')
    byKey.set(key, e)
    held.push(e)
    t.equal(interner.size, new Set(held.filter((x) => x.refs > 0)).size, 'size counts live sets')
    t.equal(interner.get(e.id), e, 'found again by its id')
    maxId = Math.max(maxId, e.id)
    peak = Math.max(peak, interner.size)
    if (rnd() < 0.4 && held.length > 0) interner.release(held.splice(Math.floor(rnd() * held.length), 1)[0]!)
  }
  // Every live set has an id of its own, and ids stay small: a forgotten set's goes to the next.
  const live = [...new Set(held)]
  t.equal(new Set(live.map((e) => e.id)).size, live.length, 'no two live sets share an id')
  t.ok(maxId <= peak, `ids reused, not counted up forever: highest ${maxId}, most sets live at once ${peak}`)
  for (const e of held) interner.release(e)
  t.equal(interner.size, 0, 'every set forgotten')
  for (const e of live) t.equal(interner.get(e.id), undefined, 'and no longer found by its id')
})

t.test('sets whose hashes collide still intern apart', async (t) => {
  // A birthday search: among 400,000 sets some pairs share a 32-bit hash.
  // Two fields vary (one alone could not collide: each mixing step is a bijection of the hash).
  const set = (i: number): PathAttributes => ({ origin: 0, asPath: [{ type: 2, asns: [Math.imul(i, 0x9e3779b1) >>> 0] }], med: Math.imul(i, 0x85ebca6b) >>> 0 })
  const seen = new Map<number, number>()
  let pair: [number, number] | undefined
  for (let i = 0; i < 400_000 && pair === undefined; i++) {
    const h = attributesHash(set(i), [])
    const j = seen.get(h)
    if (j !== undefined) pair = [j, i]
    else seen.set(h, i)
  }
  if (pair === undefined) throw new Error('no two of 400,000 sets share a hash')
  const [i, j] = pair
  const interner = new AttributeInterner()
  const a = interner.intern(set(i))
  const b = interner.intern(set(j))
  t.equal(a.hash, b.hash, `sets ${i} and ${j} share a hash`)
  t.not(a, b, 'two copies')
  t.equal(interner.size, 2)
  t.equal(interner.intern(set(j)), b, 'each found again')
  t.equal(interner.intern(set(i)), a)
  interner.release(a)
  interner.release(a)
  t.equal(interner.size, 1, 'the first forgotten')
  t.equal(interner.intern(set(j)), b, 'the second still found')
  interner.release(b)
  interner.release(b)
  interner.release(b)
  t.equal(interner.size, 0)
  t.not(interner.intern(set(i)), a, 'a forgotten set comes back as a new copy')
})
