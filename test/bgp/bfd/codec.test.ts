// The BFD Control packet (RFC 5880 §4.1) from annotated bytes: decode, encode, round trip, and every
// §6.8.6 discard the codec makes, each naming its byte offset.
import t from 'tap'
import { BfdPacketError, decodeControl, encodeControl } from '../../../bgp/bfd/codec.js'

const hex = (s: string): Buffer => Buffer.from(s.replace(/#.*$/gm, '').replace(/\s+/g, ''), 'hex')

// An Up packet with Poll, as FRR's bfdd sends when it moves to its fast rate.
const UP_POLL = hex(`
  20        # version 1, diag 0
  e8        # state Up (3), P, C
  03        # detect mult 3
  18        # length 24
  12 9b a1 e0   # my discriminator
  86 0f 4c 2c   # your discriminator
  00 01 86 a0   # desired min TX 100000 µs
  00 01 86 a0   # required min RX 100000 µs
  00 00 c3 50   # required min echo RX 50000 µs
`)

t.test('decode, encode, round trip', async (t) => {
  const p = decodeControl(UP_POLL)
  t.match(p, {
    version: 1, diag: 0, state: 'Up', poll: true, final: false, controlPlaneIndependent: true, authPresent: false, demand: false,
    detectMult: 3, myDiscriminator: 0x129ba1e0, yourDiscriminator: 0x860f4c2c, desiredMinTxInterval: 100_000, requiredMinRxInterval: 100_000,
    requiredMinEchoRxInterval: 50_000,
  })
  t.same(encodeControl(p), UP_POLL, 'encodes to the same bytes')
  const down = { ...p, state: 'Down' as const, poll: false, final: true, diag: 1, yourDiscriminator: 0 }
  t.same(decodeControl(encodeControl(down)), down, 'round trip')
  t.equal(encodeControl(down)[0], 0x21, 'diag in the low five bits')
  t.equal(encodeControl(down)[1], 0x58, 'state Down, F, C')
})

t.test('§6.8.6 discards, each with its byte offset', async (t) => {
  const bad = (edit: (b: Buffer) => void, offset: number, field: RegExp): void => {
    const b = Buffer.from(UP_POLL)
    edit(b)
    t.throws(() => decodeControl(b), { constructor: BfdPacketError, offset, message: field }, `byte ${offset} ${field}`)
  }
  t.throws(() => decodeControl(UP_POLL.subarray(0, 23)), { offset: 0, message: /23 bytes/ })
  bad((b) => (b[0] = 0x40), 0, /version 2/)
  bad((b) => (b[3] = 23), 3, /length field 23/)
  bad((b) => (b[3] = 25), 3, /exceeds the 24 bytes/)
  bad((b) => (b[2] = 0), 2, /detect multiplier/)
  bad((b) => (b[1] = b[1]! | 1), 1, /multipoint/)
  bad((b) => b.writeUInt32BE(0, 4), 4, /my discriminator/)
  bad((b) => b.writeUInt32BE(0, 8), 8, /zero in a packet with state Up/)
  bad((b) => ((b[1] = b[1]! | 0x04), (b[3] = 24)), 3, /below 26/)
  bad((b) => {
    b[1] = b[1]! | 0x04
  }, 3, /below 26/)
  const auth = Buffer.concat([UP_POLL, hex('01 02')])
  auth[1] = auth[1]! | 0x04
  auth[3] = 26
  t.throws(() => decodeControl(auth), { offset: 1, message: /without authentication/ })
  bad((b) => (b[1] = b[1]! | 0x10), 1, /both the P and F/)
  const down = Buffer.from(UP_POLL)
  down[1] = 0x40
  down.writeUInt32BE(0, 8)
  t.equal(decodeControl(down).state, 'Down', 'Your Discriminator 0 is fine in Down')
})
