// The open-addressing index under the RIB's IPv4 tables, checked against a JS Map through random inserts,
// overwrites and deletes (deletion shifts entries back, so lookups after it are the risky part).
import t from 'tap'
import { homeSlot, Ipv4Index } from '../../net/prefix-index.js'
import { Rng } from '../harness/random.js'

/** A stand-in for the table's address column: value v's network address at addr4[v], grown as needed. */
class Column {
  addr4 = new Int32Array(16)
  put(v: number, addr: number): void {
    if (v >= this.addr4.length) {
      const a = new Int32Array(Math.max(v + 1, this.addr4.length * 2))
      a.set(this.addr4)
      this.addr4 = a
    }
    this.addr4[v] = addr
  }
}

/** obtain() as the table calls it: the address goes into the column when the value was stored. */
function obtain(m: Ipv4Index, col: Column, addr: number, value: number): number {
  const d = m.obtain(addr, value)
  if (d === value) col.put(value, addr)
  return d
}

t.test('agrees with Map through 200k random operations', async (t) => {
  const rng = new Rng(12345)
  const rnd = (n: number): number => rng.int(n)
  for (const len of [32, 24, 9]) {
    const col = new Column()
    const m = new Ipv4Index(col, len)
    const ref = new Map<number, number>()
    let mismatches = 0
    for (let i = 0; i < 200_000; i++) {
      // A small key space with clustered networks, so runs collide and deletions shift entries.
      const net = rnd(3) === 0 ? rnd(5000) : rnd(200) * 4096
      const addr = len === 32 ? net >>> 0 : (net << (32 - len)) >>> 0
      const op = rnd(10)
      if (op < 5) {
        // A new value for a network: what the table does when a prefix's index changes.
        m.delete(addr)
        obtain(m, col, addr, i)
        ref.set(addr, i)
      } else if (op < 8) {
        if (m.delete(addr) !== ref.delete(addr)) mismatches++
      } else if (m.get(addr) !== (ref.get(addr) ?? -1)) mismatches++
    }
    t.equal(mismatches, 0, `/${len}`)
    t.equal(m.size, ref.size)
    for (const [k, v] of ref) if (m.get(k) !== v) mismatches++
    t.equal(mismatches, 0, `/${len}: every network still found after all the shifting`)
    t.same(m.values().sort((a, b) => a - b), [...ref.values()].sort((a, b) => a - b))
  }
})

t.test('0.0.0.0 and 255.255.255.255 are networks like any other; a /0 is found', async (t) => {
  const col = new Column()
  const m = new Ipv4Index(col, 32)
  obtain(m, col, 0, 7)
  obtain(m, col, 0xffffffff, 0)
  t.equal(m.get(0), 7)
  t.equal(m.get(0xffffffff), 0, 'value 0 is a value like any other')
  t.equal(m.get(1), -1)
  t.equal(obtain(m, col, 0xffffffff, 9), 0, 'obtain keeps what is there')
  t.equal(obtain(m, col, 5, 9), 9, 'and stores what is not')
  t.ok(m.delete(0))
  t.equal(m.get(0), -1)
  t.equal(m.get(0xffffffff), 0)
  const z = new Ipv4Index(col, 0)
  t.equal(z.get(0), -1)
  t.equal(obtain(z, col, 0, 3), 3)
  t.equal(z.get(0), 3)
})

t.test('growing keeps every network (the keys read back from the column)', async (t) => {
  const col = new Column()
  const m = new Ipv4Index(col, 24)
  const base = 0x0a000000
  for (let i = 0; i < 50_000; i++) obtain(m, col, (base + i * 256) >>> 0, i)
  let wrong = 0
  for (let i = 0; i < 50_000; i++) if (m.get((base + i * 256) >>> 0) !== i) wrong++
  t.equal(wrong, 0)
  t.equal(m.get((base + 50_000 * 256) >>> 0), -1)
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
