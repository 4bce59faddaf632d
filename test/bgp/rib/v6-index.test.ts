// The destination columns' IPv6 index: every IPv6 network (address and length, host bits clear) has a
// destination of its own, found again by the same network and by nothing else, at every length, including
// networks that differ only in their last bit and lengths that end inside a 16-bit word; released, it is
// gone while the others stay.
import t from 'tap'
import { AttributeInterner } from '../../../bgp/codec/intern.js'
import { formatPrefix, ipv6Prefix, type Ipv6Prefix } from '../../../bgp/index.js'
import { DestinationColumns } from '../../../bgp/rib/columns.js'
import { Rng } from '../../harness/random.js'

/** The network of `len` bits of `base` with bit `flip` (counted from the top, < len) set or not. */
function network(base: Uint8Array, len: number, flip: number | undefined): Ipv6Prefix {
  const a = Uint8Array.from(base)
  if (flip !== undefined) a[flip >> 3]! ^= 0x80 >> (flip & 7)
  return ipv6Prefix(a, len)
}

t.test('each IPv6 network has its own destination, found by that network only', async (t) => {
  const cols = new DestinationColumns(new AttributeInterner())
  const rng = new Rng(0x6d6)
  const networks = new Map<string, Ipv6Prefix>()
  for (let n = 0; n < 40; n++) {
    const base = new Uint8Array(16).map(() => rng.int(256))
    for (let len = 0; len <= 128; len++) {
      const p = network(base, len, undefined)
      networks.set(formatPrefix(p), p)
      // Its neighbours: the same length with the last bit (or another) flipped.
      if (len > 0) for (const flip of [len - 1, rng.int(len)]) {
        const q = network(base, len, flip)
        networks.set(formatPrefix(q), q)
      }
    }
  }
  const dest = new Map<string, number>()
  for (const [text, p] of networks) dest.set(text, cols.obtain(p))
  t.equal(new Set(dest.values()).size, networks.size, `${networks.size} networks, as many destinations`)
  let wrong = 0
  for (const [text, p] of networks) {
    const d = cols.get(ipv6Prefix(p.addr, p.len))
    if ((d !== dest.get(text) || formatPrefix(cols.prefix(d)) !== text) && wrong++ < 5) t.fail(`${text}: destination ${d}, made as ${dest.get(text)}`)
  }
  t.equal(wrong, 0, 'every network finds its own destination again, which names it')
  t.equal(cols.indices(2).length, networks.size)

  // Released (empty, held by no Adj-RIB-Out, no flush waiting), every other one is gone and the rest stay.
  let i = 0
  const gone = new Set<string>()
  for (const [text] of networks) if (i++ % 2 === 0) {
    cols.release(dest.get(text)!)
    gone.add(text)
  }
  const kept = [...networks].filter(([text]) => !gone.has(text))
  t.ok([...gone].every((text) => cols.get(networks.get(text)!) === -1), `${gone.size} released networks are not found`)
  t.ok(kept.every(([text, p]) => cols.get(p) === dest.get(text)), `${kept.length} others still are`)
})

t.test('agrees with a Map through random makes and releases in a crowded index', async (t) => {
  const cols = new DestinationColumns(new AttributeInterner())
  const rng = new Rng(0x6e7)
  // Few distinct networks, so runs of the open-addressing table collide and releases shift entries back.
  const pool = Array.from({ length: 3000 }, (_, i) => {
    const a = new Uint8Array(16)
    a[0] = 0x20
    a[1] = 0x01
    a[5] = i >> 8
    a[6] = i & 0xff
    return ipv6Prefix(a, rng.int(2) === 0 ? 48 : 64)
  })
  const ref = new Map<string, number>()
  let wrong = 0
  for (let i = 0; i < 60_000; i++) {
    const p = pool[rng.int(pool.length)]!
    const text = formatPrefix(p)
    if (rng.int(3) === 0) {
      const d = ref.get(text)
      if (d !== undefined) cols.release(d)
      ref.delete(text)
    } else {
      const d = cols.obtain(p)
      if (ref.has(text) && ref.get(text) !== d && wrong++ < 5) t.fail(`${text}: made again as ${d}, held as ${ref.get(text)}`)
      ref.set(text, d)
    }
    if (i % 1000 === 0) for (const q of pool) {
      const d = cols.get(q)
      const want = ref.get(formatPrefix(q)) ?? -1
      if (d !== want && wrong++ < 5) t.fail(`after ${i} steps ${formatPrefix(q)}: ${d}, want ${want}`)
    }
  }
  t.equal(wrong, 0, 'every lookup agrees with the Map')
  t.equal(cols.indices(2).length, ref.size)
})
