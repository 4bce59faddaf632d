// The RIB's and felix's column helpers: a grown column keeps its elements and gives the old one's memory
// back at once where the runtime can detach a buffer; a view that shares its buffer, or a small column,
// is left alone.
import t from 'tap'
import { discard, grown, touchedArray } from '../../net/index.js'

const detachable = typeof (new ArrayBuffer(8) as ArrayBuffer & { transfer?: unknown }).transfer === 'function'
const noTransfer = detachable ? false : `Node ${process.version} has no ArrayBuffer.prototype.transfer: discard() leaves columns to the collector`

t.test('grown keeps every element, zero beyond, in a column of the same kind', async (t) => {
  for (const make of [(n: number) => new Int32Array(n), (n: number) => new Uint16Array(n), (n: number) => new Uint8Array(n)]) {
    const a = make(100_000)
    for (let i = 0; i < a.length; i++) a[i] = (i * 7919) & 0x7fff
    const want = Array.from(a)
    for (const touched of [false, true]) {
      const src = touched ? make(100_000) : a
      if (touched) src.set(want)
      const b = grown(src, 250_000, touched)
      t.equal(b.constructor, a.constructor)
      t.equal(b.length, 250_000)
      let wrong = 0
      for (let i = 0; i < want.length; i++) if (b[i] !== want[i]) wrong++
      for (let i = want.length; i < b.length; i++) if (b[i] !== 0) wrong++
      t.equal(wrong, 0, `${a.constructor.name}, touched ${touched}: every element kept, zero beyond`)
    }
  }
})

t.test('a large column grown out of is given back at once', { skip: noTransfer }, async (t) => {
  const a = touchedArray(Int32Array, 1 << 20)
  const before = process.memoryUsage().arrayBuffers
  const b = grown(a, 1 << 21)
  t.equal(a.length, 0, 'the old column is detached, not left for the collector')
  t.equal(b.length, 1 << 21)
  // The old 4 MB are gone from the process's array buffers now, with no collection in between.
  t.ok(process.memoryUsage().arrayBuffers - before < (1 << 23) + (1 << 20), 'array buffers grew by the new column only')
})

t.test('a view sharing its buffer, or a small column, is left alone', async (t) => {
  const whole = new Int32Array(1 << 18)
  const view = whole.subarray(1 << 10)
  discard(view)
  t.equal(view.length, (1 << 18) - (1 << 10), 'a view past the start: its buffer has other users')
  t.equal(whole.length, 1 << 18)
  const pooled = Buffer.from('pooled bytes')
  discard(new Uint8Array(pooled.buffer, pooled.byteOffset, pooled.length))
  t.equal(pooled.toString(), 'pooled bytes', "a slice of Node's buffer pool")
  const small = new Int32Array(16)
  small[3] = 9
  discard(small)
  t.equal(small[3], 9, 'a small column')
})
