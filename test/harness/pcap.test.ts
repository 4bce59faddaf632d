// The pcap reader and the fixture format, on pcap files built byte by byte here: reassembly must survive
// reordering, retransmission, overlap and Ethernet padding, and report a hole or a broken frame by offset.
import t from 'tap'
import { parsePcap, reassemble, connectionBetween, sentBy, PcapError } from './pcap.js'
import { splitMessages, toHexLines, fromHexLines, messageType } from './bgp-hex.js'

interface Seg {
  src: string
  dst: string
  sport: number
  dport: number
  seq: number
  flags?: number
  data?: Buffer
}

const SYN = 0x02
const ACK = 0x10
const FIN = 0x01

function v4(a: string): Buffer {
  return Buffer.from(a.split('.').map(Number))
}
function v6(a: string): Buffer {
  // only the forms used below: "2001:db8::N"
  const [head, tail] = a.split('::')
  const h = (head ?? '').split(':').map((x) => parseInt(x, 16))
  const tl = (tail ?? '').split(':').filter((x) => x !== '').map((x) => parseInt(x, 16))
  const groups = [...h, ...new Array<number>(8 - h.length - tl.length).fill(0), ...tl]
  const b = Buffer.alloc(16)
  groups.forEach((g, i) => b.writeUInt16BE(g, i * 2))
  return b
}

function tcp(s: Seg): Buffer {
  const h = Buffer.alloc(20)
  h.writeUInt16BE(s.sport, 0)
  h.writeUInt16BE(s.dport, 2)
  h.writeUInt32BE(s.seq >>> 0, 4)
  h[12] = 5 << 4
  h[13] = s.flags ?? ACK
  return Buffer.concat([h, s.data ?? Buffer.alloc(0)])
}

function frame(s: Seg, pad = 0): Buffer {
  const eth = Buffer.alloc(14)
  const seg = tcp(s)
  let ip: Buffer
  if (s.src.includes(':')) {
    eth.writeUInt16BE(0x86dd, 12)
    ip = Buffer.alloc(40)
    ip[0] = 0x60
    ip.writeUInt16BE(seg.length, 4)
    ip[6] = 6
    ip[7] = 64
    v6(s.src).copy(ip, 8)
    v6(s.dst).copy(ip, 24)
  } else {
    eth.writeUInt16BE(0x0800, 12)
    ip = Buffer.alloc(20)
    ip[0] = 0x45
    ip.writeUInt16BE(20 + seg.length, 2)
    ip[8] = 64
    ip[9] = 6
    v4(s.src).copy(ip, 12)
    v4(s.dst).copy(ip, 16)
  }
  return Buffer.concat([eth, ip, seg, Buffer.alloc(pad)])
}

function pcap(frames: Buffer[], bigEndian = false): Buffer {
  const g = Buffer.alloc(24)
  const w32 = (b: Buffer, v: number, o: number): number => (bigEndian ? b.writeUInt32BE(v, o) : b.writeUInt32LE(v, o))
  w32(g, 0xa1b2c3d4, 0)
  g.writeUInt16LE(2, 4)
  g.writeUInt16LE(4, 6)
  w32(g, 262144, 16)
  w32(g, 1, 20)
  const recs = frames.map((f, i) => {
    const r = Buffer.alloc(16)
    w32(r, 1700000000 + i, 0)
    w32(r, f.length, 8)
    w32(r, f.length, 12)
    return Buffer.concat([r, f])
  })
  return Buffer.concat([g, ...recs])
}

/** A BGP KEEPALIVE and a fake 30-byte UPDATE-shaped message, to give the stream real framing. */
function bgp(type: number, bodyLen: number, fill: number): Buffer {
  const m = Buffer.alloc(19 + bodyLen, fill)
  m.fill(0xff, 0, 16)
  m.writeUInt16BE(19 + bodyLen, 16)
  m[18] = type
  return m
}

const A = '192.0.2.1'
const B = '192.0.2.2'

t.test('reassembles both directions despite reordering, retransmission, overlap and padding', async (t) => {
  const aStream = Buffer.concat([bgp(1, 10, 0x11), bgp(4, 0, 0), bgp(2, 30, 0x22)]) // 29 + 19 + 49 = 97 bytes
  const bStream = Buffer.concat([bgp(1, 12, 0x33), bgp(4, 0, 0)])
  const isnA = 0xfffffff0 // the stream wraps past 2^32 on purpose
  const isnB = 1000
  const a = (off: number, len: number): Seg => ({ src: A, dst: B, sport: 40000, dport: 179, seq: (isnA + 1 + off) >>> 0, data: aStream.subarray(off, off + len) })
  const b = (off: number, len: number): Seg => ({ src: B, dst: A, sport: 179, dport: 40000, seq: isnB + 1 + off, data: bStream.subarray(off, off + len) })
  const frames = [
    frame({ src: A, dst: B, sport: 40000, dport: 179, seq: isnA, flags: SYN }),
    frame({ src: B, dst: A, sport: 179, dport: 40000, seq: isnB, flags: SYN | ACK }),
    frame(a(0, 20), 0),
    frame(b(0, 31), 0),
    frame(a(48, 49)), // out of order: arrives before 20..48
    frame(a(10, 30)), // overlaps the first segment and part of the gap
    frame(a(0, 20)), // pure retransmission
    frame(a(40, 8)),
    frame(b(31, 19), 27), // a short frame padded by Ethernet: padding must not count as data
    frame({ src: A, dst: B, sport: 40000, dport: 179, seq: (isnA + 1 + 97) >>> 0, flags: FIN | ACK }),
  ]
  for (const bigEndian of [false, true]) {
    const conns = reassemble(parsePcap(pcap(frames, bigEndian)))
    t.equal(conns.length, 1)
    const c = connectionBetween(conns, A, B)
    t.equal(c.a.src, A, 'the SYN sender is side a')
    t.ok(sentBy(c, A).equals(aStream), `A's stream is exact (${bigEndian ? 'big' : 'little'}-endian file)`)
    t.ok(sentBy(c, B).equals(bStream), "B's stream is exact")
    t.ok(c.a.finSeen && !c.b.finSeen)
    t.same(splitMessages(sentBy(c, A)).map(messageType), ['OPEN', 'KEEPALIVE', 'UPDATE'])
  }
})

t.test('IPv6 transport and a capture that starts mid-stream (no SYN)', async (t) => {
  const data = Buffer.concat([bgp(4, 0, 0), bgp(4, 0, 0)])
  const s = (off: number, len: number): Seg => ({ src: '2001:db8::1', dst: '2001:db8::2', sport: 179, dport: 50000, seq: 5000 + off, data: data.subarray(off, off + len) })
  const conns = reassemble(parsePcap(pcap([frame(s(19, 19)), frame(s(0, 19))])))
  const c = connectionBetween(conns, '2001:db8::1', '2001:db8::2')
  t.ok(sentBy(c, '2001:db8::1').equals(data))
  t.equal(c.a.synSeen, false)
})

t.test('a hole in a stream is an error naming the missing bytes', async (t) => {
  const s = (seq: number, len: number): Seg => ({ src: A, dst: B, sport: 1, dport: 179, seq, data: Buffer.alloc(len, 1) })
  const segs = parsePcap(pcap([frame({ src: A, dst: B, sport: 1, dport: 179, seq: 99, flags: SYN }), frame(s(100, 10)), frame(s(115, 5))]))
  t.throws(() => reassemble(segs), /bytes 10\.\.14 of the stream were never captured/)
})

t.test('bad files are refused with the byte offset', async (t) => {
  t.throws(() => parsePcap(Buffer.alloc(10)), PcapError)
  t.throws(() => parsePcap(Buffer.alloc(24)), /offset 0: magic 0x0/)
  const g = pcap([])
  g.writeUInt32LE(105, 20)
  t.throws(() => parsePcap(g), /offset 20: link type 105/)
  // A record cut short (tcpdump still writing) is ignored, not an error.
  const whole = pcap([frame({ src: A, dst: B, sport: 1, dport: 179, seq: 1, data: Buffer.alloc(5) })])
  t.equal(parsePcap(whole.subarray(0, whole.length - 3)).length, 0)
})

t.test('fixture text format: split, hex lines and back; framing errors name the offset', async (t) => {
  const msgs = [bgp(1, 10, 0x11), bgp(4, 0, 0)]
  const text = toHexLines(msgs)
  t.equal(text.split('\n').length, 3, 'one line per message plus the final newline')
  t.same(fromHexLines(`# a comment\n${text}\n`), msgs)
  t.throws(() => fromHexLines('abc\n', 'x.hex'), /x\.hex:1: not an even-length lowercase hex string/)
  const broken = Buffer.concat([bgp(4, 0, 0), bgp(4, 0, 0)])
  broken[19 + 3] = 0
  t.throws(() => splitMessages(broken), /stream offset 22: marker byte is 0x0/)
  const short = bgp(4, 0, 0)
  short.writeUInt16BE(18, 16)
  t.throws(() => splitMessages(short), /stream offset 16: message length 18 outside 19\.\.65535/)
  t.throws(() => splitMessages(bgp(2, 10, 0).subarray(0, 25)), /cut short/)
})
