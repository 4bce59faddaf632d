// The open-addressing map under the IPv4 tables, checked against a JS Map through random inserts,
// overwrites and deletes (deletion shifts entries back, so lookups after it are the risky part); and the
// bit set the Adj-RIB-Outs keep their destinations in, against a JS Set.
import t from 'tap'
import { homeSlot, IndexMap, IndexSet } from '../../bgp/rib/number-map.js'
import { Rng } from '../harness/random.js'

t.test('agrees with Map through 200k random operations', async (t) => {
  const rng = new Rng(12345)
  const rnd = (n: number): number => rng.int(n)
  const m = new IndexMap()
  const ref = new Map<number, number>()
  let mismatches = 0
  for (let i = 0; i < 200_000; i++) {
    // A small key space with clustered keys, so runs collide and deletions shift entries.
    const key = rnd(3) === 0 ? rnd(5000) : (rnd(200) * 4096) >>> 0
    const op = rnd(10)
    if (op < 5) {
      // A new value for a key: what the table does when a prefix's index changes.
      m.delete(key)
      m.obtain(key, i)
      ref.set(key, i)
    } else if (op < 8) {
      if (m.delete(key) !== ref.delete(key)) mismatches++
    } else if (m.get(key) !== (ref.get(key) ?? -1)) mismatches++
  }
  t.equal(mismatches, 0)
  t.equal(m.size, ref.size)
  for (const [k, v] of ref) if (m.get(k) !== v) mismatches++
  t.equal(mismatches, 0, 'every key still found after all the shifting')
  t.same(m.values().sort((a, b) => a - b), [...ref.values()].sort((a, b) => a - b))
})

t.test('0 and 0xffffffff are keys like any other', async (t) => {
  const m = new IndexMap()
  m.obtain(0, 7)
  m.obtain(0xffffffff, 0)
  t.equal(m.get(0), 7)
  t.equal(m.get(0xffffffff), 0, 'value 0 is a value like any other')
  t.equal(m.get(1), -1)
  t.equal(m.obtain(0xffffffff, 9), 0, 'obtain keeps what is there')
  t.equal(m.obtain(5, 9), 9, 'and stores what is not')
  t.ok(m.delete(0))
  t.equal(m.get(0), -1)
  t.equal(m.get(0xffffffff), 0)
})

/** Mean probes per key when `keys` go into 2^bits slots by linear probing from their home slots. */
function meanProbes(keys: readonly number[], bits: number): number {
  const used = new Uint8Array(1 << bits)
  const mask = (1 << bits) - 1
  let probes = 0
  for (const k of keys) {
    let i = homeSlot(k, 32 - bits)
    probes++
    while (used[i] === 1) {
      i = (i + 1) & mask
      probes++
    }
    used[i] = 1
  }
  return probes / keys.length
}

t.test('keys with a common stride still find a free slot within a few probes', async (t) => {
  // 6144 keys in 8192 slots (the table's highest load, 3/4): consecutive keys, and strides of whole /24s
  // and /20s, as address-derived keys often have. A hash of the low bits of the product would put every
  // key of stride 256 in one of 32 slots: thousands of probes each.
  for (const stride of [1, 3, 8, 256, 4096, 65536]) {
    const keys = Array.from({ length: 6144 }, (_, i) => Math.imul(i, stride) >>> 0)
    const mean = meanProbes(keys, 13)
    t.ok(mean < 4, `stride ${stride}: ${mean.toFixed(2)} probes per key`)
  }
})

t.test('eight neighbouring keys keep their order inside one bucket', async (t) => {
  const home = homeSlot(0x0a400008, 32 - 20)
  t.equal(home % 8, 0)
  for (let i = 1; i < 8; i++) t.equal(homeSlot(0x0a400008 + i, 32 - 20), home + i)
  t.not(homeSlot(0x0a400010, 32 - 20), home + 8, 'the next eight go to a bucket of their own')
})

t.test('IndexSet agrees with a Set over random adds and deletes, and iterates in increasing order', async (t) => {
  const s = new IndexSet()
  const ref = new Set<number>()
  const rng = new Rng(7)
  const rnd = (n: number): number => rng.int(n)
  for (let i = 0; i < 100_000; i++) {
    // Mostly small indices, some far out (a table that grew), so words are added as it goes.
    const k = rnd(10) === 0 ? rnd(2_000_000) : rnd(5000)
    if (rnd(3) === 0) {
      if (s.delete(k) !== ref.delete(k)) t.fail(`delete ${k}`)
    }
    else {
      const had = ref.has(k)
      ref.add(k)
      if (s.add(k) === had) t.fail(`add ${k}`)
    }
    if (s.size !== ref.size) t.fail(`size after op ${i}`)
  }
  t.equal(s.size, ref.size)
  for (let k = 0; k < 6000; k++) if (s.has(k) !== ref.has(k)) t.fail(`has ${k}`)
  t.notOk(s.has(5_000_000), 'beyond every word')
  t.same([...s], [...ref].sort((a, b) => a - b))
  s.clear()
  t.equal(s.size, 0)
  t.same([...s], [])
  t.ok(s.add(31) && s.add(32) && s.add(0) && !s.add(32))
  t.same([...s], [0, 31, 32], 'word edges')
})
