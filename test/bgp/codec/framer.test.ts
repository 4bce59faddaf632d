// The framer fed at every split point of a stream, one byte at a time, and with header errors
// whose offsets count from the start of the stream.
import t from 'tap'
import { hex, MARKER } from './hex.js'
import { Framer, codecOptions, encodeMessage, endOfRibUpdate, KEEPALIVE, packUpdates, parsePrefix } from '../../../bgp/index.js'

const opts = codecOptions()
const stream = Buffer.concat([
  encodeMessage(KEEPALIVE, opts),
  ...packUpdates({ afi: 1, attributes: { origin: 0, asPath: [], nextHop: '192.0.2.1' }, announce: [parsePrefix('198.18.0.0/24'), parsePrefix('198.18.1.0/24')] }, opts),
  encodeMessage(endOfRibUpdate(2, 1), opts),
  encodeMessage(KEEPALIVE, opts),
])
const expected = [19, stream.length - 19 - 30 - 19, 30, 19]

t.test('every split point yields the same frames', async (t) => {
  for (let cut = 0; cut <= stream.length; cut++) {
    const f = new Framer()
    const frames = [...f.push(stream.subarray(0, cut)), ...f.push(stream.subarray(cut))].map((x) => Buffer.from(x))
    if (frames.map((x) => x.length).join() !== expected.join()) {
      t.fail(`split at ${cut}: frame lengths ${frames.map((x) => x.length).join()}`)
      return
    }
    if (Buffer.compare(Buffer.concat(frames), stream) !== 0) {
      t.fail(`split at ${cut}: bytes differ`)
      return
    }
    t.equal(f.buffered, 0)
  }
  t.pass(`all ${stream.length + 1} split points`)
})

t.test('one byte at a time', async (t) => {
  const f = new Framer()
  const frames: Buffer[] = []
  for (const b of stream) frames.push(...f.push(Uint8Array.of(b)).map((x) => Buffer.from(x)))
  t.same(frames.map((x) => x.length), expected)
})

t.test('frames that lie in one chunk are views, not copies', async (t) => {
  const f = new Framer()
  const frames = f.push(stream)
  t.equal(frames[0]!.buffer, stream.buffer)
})

t.test('frames are plain Uint8Arrays whether they lay in one Buffer chunk or were joined', async (t) => {
  // The decoders see one type of array: a Buffer in some frames and a Uint8Array in others made V8 throw
  // their optimized code away in the middle of a table dump.
  for (let cut = 0; cut <= stream.length; cut++) {
    const f = new Framer()
    const frames = [...f.push(stream.subarray(0, cut)), ...f.push(stream.subarray(cut))]
    const other = frames.find((x) => x.constructor !== Uint8Array)
    if (other !== undefined) {
      t.fail(`split at ${cut}: a frame is a ${other.constructor.name}`)
      return
    }
  }
  t.pass(`all ${stream.length + 1} split points`)
})

t.test('a header error names its offset in the stream', async (t) => {
  const f = new Framer()
  const bad = Buffer.concat([encodeMessage(KEEPALIVE, opts), hex`${MARKER} 0013 09`])
  t.throws(() => f.push(bad), { name: 'BgpError', code: 1, subcode: 3, offset: 19 + 18 })
})

t.test('extended message raises the UPDATE limit to 65535 only when negotiated', async (t) => {
  const big = Buffer.concat([hex(MARKER), Buffer.from([0x20, 0x00, 2]), Buffer.alloc(0x2000 - 19)])
  t.throws(() => new Framer().push(big), { name: 'BgpError', code: 1, subcode: 2 })
  const f = new Framer()
  f.setExtendedMessage(true)
  t.equal(f.push(big).length, 1)
})

t.test('a partial header waits for more bytes', async (t) => {
  const f = new Framer()
  t.same(f.push(stream.subarray(0, 10)), [])
  t.equal(f.buffered, 10)
  t.equal(f.offset, 0)
})
