// The bit set the Adj-RIB-Outs keep their destinations in, against a JS Set.
import t from 'tap'
import { IndexSet } from '../../../bgp/rib/index-set.js'
import { Rng } from '../../harness/random.js'

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
