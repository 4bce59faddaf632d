// The IPv4 prefix map (typed arrays, open addressing) against a Map keyed by the prefix's text over
// random prefixes: sets, adds, deletes, lookups, growth and reuse of deleted slots, a walk that deletes as
// it goes; and LearnedRoutes' walk over it while routes come and go.

import t from 'tap'
import { LearnedRoutes } from '../../felix/index.js'
import { formatIpv4, V4PrefixMap } from '../../net/index.js'
import { Rng } from '../harness/random.js'

interface Prefix {
  addr: number
  len: number
  text: string
}

/**
 * A random network, host bits clear: the address from a few shapes (both halves of the unsigned range, so
 * signed and unsigned forms meet; shared leading bits, so probe runs are long), the length skewed to a few.
 */
function prefix(r: Rng): Prefix {
  const len = r.pick([0, 1, 8, 16, 23, 24, 28, 28, 28, 31, 32, 32])
  const shape = r.int(3)
  const raw = shape === 0 ? r.next() : shape === 1 ? 0x0a000000 + r.int(1 << 16) * 16 : 0xc0000000 + r.int(64)
  const addr = len === 0 ? 0 : (raw & (~0 << (32 - len))) >>> 0
  return { addr, len, text: `${formatIpv4(addr)}/${len}` }
}

function walk(m: V4PrefixMap): Map<string, number> {
  const out = new Map<string, number>()
  for (let s = m.next(-1); s >= 0; s = m.next(s)) {
    const text = `${formatIpv4(m.addrAt(s))}/${m.lenAt(s)}`
    if (out.has(text)) throw new Error(`${text} walked twice`)
    out.set(text, m.valueAt(s))
  }
  return out
}

t.test('random sets, adds, deletes and lookups agree with a Map keyed by text', async (t) => {
  // Seeds 3 and 4 with -1 implicit, as the pending list's map: no value column until a value differs from it.
  for (const [seed, implicit] of [[1, undefined], [2, undefined], [3, -1], [4, -1]] as const) {
    const r = new Rng(seed)
    const m = new V4PrefixMap(undefined, implicit)
    const ref = new Map<string, number>()
    const seen: Prefix[] = []
    let bad = 0
    const check = (ok: boolean, what: string): void => {
      if (!ok && bad++ < 5) t.fail(`seed ${seed}: ${what}`)
    }
    for (let step = 0; step < 80_000; step++) {
      const p = seen.length > 0 && r.int(3) === 0 ? r.pick(seen) : prefix(r)
      if (seen.length < 20_000) seen.push(p)
      // Values as the users store them: combos with a flag bit, and -1 for "held nothing"; with -1 implicit,
      // mostly -1 until a late stretch, so values first differ from it in a large table.
      const v = r.int(4) === 0 || (implicit !== undefined && step < 60_000) ? -1 : r.int(1 << 30)
      // The address signed or not names the same prefix.
      const addr = r.int(2) === 0 ? p.addr : p.addr | 0
      const op = r.int(12)
      if (op < 4) {
        check(m.set(addr, p.len, v, -7) === (ref.get(p.text) ?? -7), `set ${p.text}`)
        ref.set(p.text, v)
      } else if (op < 6) {
        const was = ref.get(p.text)
        check(m.add(addr, p.len, v, -7) === (was ?? -7), `add ${p.text}`)
        if (was === undefined) ref.set(p.text, v)
      } else if (op < 9) check(m.delete(addr, p.len) === ref.delete(p.text), `delete ${p.text}`)
      else check(m.get(addr, p.len, -7) === (ref.get(p.text) ?? -7) && m.has(addr, p.len) === ref.has(p.text), `get ${p.text}`)
      check(m.size === ref.size, `size after step ${step}`)
    }
    t.equal(bad, 0, `seed ${seed}: every operation answered as the Map did`)
    t.same([...walk(m)].sort(), [...ref].sort(), `seed ${seed}: a walk yields every prefix once with its value`)
  }
})

t.test('one address at every length, and neighbours, are told apart; growth keeps them', async (t) => {
  const m = new V4PrefixMap()
  const ref = new Map<string, number>()
  let v = 0
  // Dense: consecutive /28s and /32s and the same addresses at every length, so the table doubles many times.
  for (let i = 0; i < 40_000; i++) {
    const addr = (0x0a000000 + i * 16) >>> 0
    for (const len of [28, 32, i < 64 ? i % 33 : 28]) {
      const a = (addr & (len === 0 ? 0 : ~0 << (32 - len))) >>> 0
      const text = `${formatIpv4(a)}/${len}`
      if (!ref.has(text)) ref.set(text, v++)
      m.set(a, len, ref.get(text)!)
    }
  }
  t.ok(m.epoch >= 12, `grew many times (${m.epoch} resizes)`)
  let bad = 0
  for (const [text, want] of ref) {
    const [addr, len] = text.split('/')
    const n = addr!.split('.').reduce((acc, o) => acc * 256 + Number(o), 0)
    const got = m.get(n, Number(len))
    if (got !== want && bad++ < 5) t.fail(`${text}: ${got}, expected ${want}`)
  }
  t.equal(bad, 0, `${ref.size} prefixes each found with its own value`)
  t.equal(m.size, ref.size)
})

t.test('a walk may delete as it goes and meanwhile; held slots move only on growth or clear', async (t) => {
  const r = new Rng(9)
  const m = new V4PrefixMap()
  const held = new Map<string, Prefix>()
  for (let i = 0; i < 5000; i++) {
    const p = prefix(r)
    m.set(p.addr, p.len, i)
    held.set(p.text, p)
  }
  // A quarter is deleted from elsewhere in the table while the walk runs; the rest are held throughout.
  const doomed = [...held.values()].filter(() => r.int(4) === 0)
  const epoch = m.epoch
  const walked = new Set<string>()
  for (let s = m.next(-1); s >= 0; s = m.next(s)) {
    const text = `${formatIpv4(m.addrAt(s))}/${m.lenAt(s)}`
    if (walked.has(text)) t.fail(`${text} walked twice`)
    walked.add(text)
    m.deleteAt(s)
    const d = doomed.pop()
    if (d !== undefined) {
      m.delete(d.addr, d.len)
      held.delete(d.text)
    }
  }
  t.equal(m.epoch, epoch, 'deleting moved nothing')
  t.equal(m.size, 0, 'every prefix deleted')
  t.same([...held.keys()].filter((k) => !walked.has(k)), [], 'every prefix held throughout was walked')
  // Deleted slots are reused or dropped by a resize: a long run of sets and deletes stays small and correct.
  const p = { addr: 0x0b000010, len: 28 } // outside what prefix() makes
  m.set(p.addr, p.len, 5)
  for (let i = 0; i < 200_000; i++) {
    const q = prefix(r)
    const had = m.has(q.addr, q.len)
    m.set(q.addr, q.len, 1)
    if (!had) m.delete(q.addr, q.len)
  }
  t.equal(m.get(p.addr, p.len), 5, 'a prefix held through the churn keeps its value')
  t.ok(m.size < 3, 'the churn left nothing else behind')
  m.clear()
  t.equal(m.next(-1), -1, 'cleared')
  t.equal(m.size, 0)
})

t.test("LearnedRoutes' walk sees every route held throughout while others come and go", async (t) => {
  const r = new Rng(4)
  const learned = new LearnedRoutes()
  const combo = learned.intern([1], undefined)
  const kept = new Set<string>()
  const churn: Prefix[] = []
  for (let i = 0; i < 3000; i++) {
    const p = prefix(r)
    learned.set(4, p.addr, undefined, p.len, combo)
    if (i % 3 === 0) churn.push(p)
    else kept.add(p.text)
  }
  for (const p of churn) kept.delete(p.text)
  const seen = new Set<string>()
  let n = 0
  let inserts = 0
  for (const e of learned.entries()) {
    seen.add(`${formatIpv4(e.addr4)}/${e.len}`)
    // Deletes and inserts, the inserts enough to grow the storage several times over.
    const d = churn.pop()
    if (d !== undefined) learned.delete(4, d.addr, undefined, d.len)
    for (let k = 0; k < 4 && inserts < 30_000; k++, inserts++) {
      const p = prefix(r)
      if (learned.get(4, p.addr, undefined, p.len) < 0) learned.set(4, p.addr, undefined, p.len, combo)
    }
    if (++n > 1_000_000) break
  }
  t.ok(n < 1_000_000, `the walk ends (${n} entries walked)`)
  t.same([...kept].filter((k) => !seen.has(k)), [], 'every route held throughout was seen')
})

t.test('a map with an implicit value keeps no value column while every value is it', {
  skip: typeof (new ArrayBuffer(8) as ArrayBuffer & { transfer?: unknown }).transfer === 'function' ? false : `Node ${process.version} cannot detach buffers: columns grown out of wait for the collector, so array buffer sizes say nothing here`,
}, async (t) => {
  const N = 200_000
  const grownBy = (m: V4PrefixMap, value: number): number => {
    const before = process.memoryUsage().arrayBuffers
    for (let i = 0; i < N; i++) m.set((0x0a000000 + i * 16) >>> 0, 28, value)
    return process.memoryUsage().arrayBuffers - before
  }
  const plain = grownBy(new V4PrefixMap(), -1)
  const implicit = grownBy(new V4PrefixMap(undefined, -1), -1)
  // A value column is 4 bytes a slot, and there are at least as many slots as prefixes.
  t.ok(plain - implicit >= 4 * N, `the implicit map took ${plain - implicit} bytes fewer (${implicit} against ${plain})`)
  const differs = grownBy(new V4PrefixMap(undefined, -1), 7)
  t.ok(differs - implicit >= 4 * N, 'a map whose values differ from the implicit one stores them')
})
