// The open-addressing map under the IPv4 tables, checked against a JS Map through random inserts,
// overwrites and deletes (deletion shifts entries back, so lookups after it are the risky part).
import t from 'tap'
import { fibonacciSlot, NumberMap } from '../../bgp/rib/number-map.js'

t.test('agrees with Map through 200k random operations', async (t) => {
  let seed = 12345
  const rnd = (n: number): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return seed % n
  }
  const m = new NumberMap<{ v: number }>()
  const ref = new Map<number, { v: number }>()
  let mismatches = 0
  for (let i = 0; i < 200_000; i++) {
    // A small key space with clustered keys, so runs collide and deletions shift entries.
    const key = rnd(3) === 0 ? rnd(5000) : (rnd(200) * 4096) >>> 0
    const op = rnd(10)
    if (op < 5) {
      const v = { v: i }
      m.set(key, v)
      ref.set(key, v)
    } else if (op < 8) {
      if (m.delete(key) !== ref.delete(key)) mismatches++
    } else if (m.get(key) !== ref.get(key)) mismatches++
  }
  t.equal(mismatches, 0)
  t.equal(m.size, ref.size)
  for (const [k, v] of ref) if (m.get(k) !== v) mismatches++
  t.equal(mismatches, 0, 'every key still found after all the shifting')
  t.equal([...m.values()].length, ref.size)
})

t.test('0 and 0xffffffff are keys like any other', async (t) => {
  const m = new NumberMap<string>()
  m.set(0, 'zero')
  m.set(0xffffffff, 'max')
  t.equal(m.get(0), 'zero')
  t.equal(m.get(0xffffffff), 'max')
  t.equal(m.get(1), undefined)
  t.ok(m.delete(0))
  t.equal(m.get(0), undefined)
  t.equal(m.get(0xffffffff), 'max')
})

t.test('home slots spread keys with a common stride (the low bits of a product would not)', async (t) => {
  // 4096 keys in 8192 slots: strides of whole /24s and /20s, as address-derived keys often have.
  for (const stride of [1, 256, 4096, 65536]) {
    const slots = new Set<number>()
    for (let i = 0; i < 4096; i++) slots.add(fibonacciSlot(Math.imul(i, stride) >>> 0, 32 - 13))
    // Random placement would give ~3200; the low bits of the product gave 32 for a stride of 256.
    t.ok(slots.size > 4096 * 0.5, `stride ${stride}: ${slots.size} distinct home slots of 4096 keys`)
  }
})
