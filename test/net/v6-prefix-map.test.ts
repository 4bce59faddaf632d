// The IPv6 prefix map (typed arrays, open addressing) against a Map keyed by the prefix's text over
// random prefixes: sets, deletes, lookups at an offset, growth and reuse of deleted slots, a walk that
// deletes as it goes; and ipv6Within against the CIDR containment on bigint.

import t from 'tap'
import { cidrContains, formatIpv6, ipv6Within, parseIpv6, V6PrefixMap } from '../../net/index.js'
import { Rng } from '../harness/random.js'

/** A random network: a few shared leading bytes (so prefixes collide in their first words), host bits clear. */
function prefix(r: Rng): { addr: Uint8Array; len: number; text: string } {
  const addr = new Uint8Array(16)
  addr[0] = 0x20
  addr[1] = 0x01
  addr[2] = 0x0d
  addr[3] = 0xb8
  for (let i = 4; i < 16; i++) addr[i] = r.int(4) === 0 ? r.int(256) : r.int(3)
  const len = r.pick([0, 1, 32, 47, 48, 56, 63, 64, 65, 96, 127, 128])
  for (let b = len; b < 128; b++) addr[b >> 3]! &= ~(0x80 >> (b & 7))
  return { addr, len, text: `${formatIpv6(addr)}/${len}` }
}

t.test('random sets, deletes and lookups agree with a Map keyed by text', async (t) => {
  // Seeds 3 and 4 with -1 implicit, as the pending list's map: no value column until a value differs from it.
  for (const [seed, implicit] of [[1, undefined], [2, undefined], [3, -1], [4, -1]] as const) {
    const r = new Rng(seed)
    const m = new V6PrefixMap(undefined, implicit)
    const ref = new Map<string, number>()
    const seen: { addr: Uint8Array; len: number; text: string }[] = []
    let bad = 0
    for (let step = 0; step < 60_000; step++) {
      const p = seen.length > 0 && r.int(3) === 0 ? r.pick(seen) : prefix(r)
      if (seen.length < 20_000) seen.push(p)
      const op = r.int(10)
      if (op < 5) {
        const v = implicit !== undefined && (step < 40_000 || r.int(2) === 0) ? -1 : r.int(1 << 30)
        m.set(p.addr, p.len, v)
        ref.set(p.text, v)
      } else if (op < 8) {
        if (m.delete(p.addr, p.len) !== ref.delete(p.text) && bad++ < 5) t.fail(`seed ${seed}: delete ${p.text}`)
      } else {
        // Looked up at an offset inside a larger buffer, as a dumped route's address is.
        const buf = new Uint8Array(40)
        buf.set(p.addr, 7)
        if (m.get(buf, p.len, -1, 7) !== (ref.get(p.text) ?? -1) && bad++ < 5) t.fail(`seed ${seed}: get ${p.text}`)
      }
    }
    t.equal(bad, 0, `seed ${seed}: every operation answered as the Map did`)
    t.equal(m.size, ref.size, `seed ${seed}: size`)
    const walked = new Map<string, number>()
    const a = new Uint8Array(16)
    for (let s = m.next(-1); s >= 0; s = m.next(s)) walked.set(`${formatIpv6(m.addrAt(s, a))}/${m.lenAt(s)}`, m.valueAt(s))
    t.same([...walked].sort(), [...ref].sort(), `seed ${seed}: a walk yields every prefix once with its value`)
  }
})

t.test('prefixes that differ in a single byte or in their length are told apart', async (t) => {
  // Dense: every value of every byte, at two lengths, so probe runs are long and pass over near neighbours.
  const m = new V6PrefixMap()
  const ref = new Map<string, number>()
  const a = new Uint8Array(16)
  let v = 0
  for (let i = 0; i < 16; i++) {
    for (let b = 0; b < 256; b++) {
      a.fill(0)
      a[i] = b
      for (const len of [127, 128]) {
        const text = `${formatIpv6(a)}/${len}`
        if (!ref.has(text)) ref.set(text, v)
        m.set(a, len, ref.get(text)!)
        v++
      }
    }
  }
  let bad = 0
  for (const [text, want] of ref) {
    const [addr, len] = text.split('/')
    const got = m.get(parseIpv6(addr!)!, Number(len))
    if (got !== want && bad++ < 5) t.fail(`${text}: ${got}, expected ${want}`)
  }
  t.equal(bad, 0, `${ref.size} prefixes each found with its own value`)
  t.equal(m.size, ref.size)
})

t.test('a walk may delete what it has passed; slots move only on growth or clear', async (t) => {
  const r = new Rng(9)
  const m = new V6PrefixMap()
  const texts = new Set<string>()
  for (let i = 0; i < 5000; i++) {
    const p = prefix(r)
    m.set(p.addr, p.len, i)
    texts.add(p.text)
  }
  t.equal(m.size, texts.size)
  const held = m.size
  const epoch = m.epoch
  const a = new Uint8Array(16)
  let n = 0
  for (let s = m.next(-1); s >= 0; s = m.next(s)) {
    m.addrAt(s, a)
    if (!texts.delete(`${formatIpv6(a)}/${m.lenAt(s)}`)) t.fail('a prefix walked twice')
    m.deleteAt(s)
    n++
  }
  t.equal(texts.size, 0, 'every prefix walked')
  t.equal(m.size, 0, 'and deleted')
  t.equal(m.epoch, epoch, 'deleting moved nothing')
  t.equal(n, held, 'each once')
  // Deleted slots are reused or cleaned up by a resize: a long run of sets and deletes stays correct.
  for (let i = 0; i < 200_000; i++) {
    const p = prefix(r)
    m.set(p.addr, p.len, 1)
    m.delete(p.addr, p.len)
  }
  t.equal(m.size, 0)
  m.clear()
  t.equal(m.next(-1), -1, 'cleared')
})

t.test('ipv6Within agrees with the CIDR containment on bigint', async (t) => {
  const r = new Rng(0x77)
  let bad = 0
  for (let n = 0; n < 20_000; n++) {
    const net = prefix(r)
    const addr = Uint8Array.from(net.addr)
    for (let k = r.int(3); k > 0; k--) addr[r.int(16)]! ^= 1 << r.int(8)
    const at = r.int(4)
    const buf = new Uint8Array(20)
    buf.set(addr, at)
    const big = (b: Uint8Array): bigint => BigInt(`0x${Buffer.from(b).toString('hex')}`)
    const want = cidrContains({ family: 6, base: big(net.addr), prefix: net.len }, 6, big(addr))
    if (ipv6Within(net.addr, net.len, buf, at) !== want && bad++ < 5) t.fail(`${formatIpv6(addr)} in ${net.text}: expected ${want}`)
  }
  t.equal(bad, 0, 'every address answered the same')
})
