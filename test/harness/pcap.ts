// Reads classic pcap files (as `tcpdump -w` writes them) and reassembles each TCP direction into the byte
// stream the application saw, in sequence order, tolerating retransmissions and reordering. Pure: bytes in,
// streams out; knows nothing of BGP. Errors name the byte offset in the file.

export interface TcpSegment {
  readonly src: string
  readonly srcPort: number
  readonly dst: string
  readonly dstPort: number
  readonly seq: number
  readonly syn: boolean
  readonly fin: boolean
  readonly rst: boolean
  readonly payload: Buffer
  /** Capture time in microseconds since the epoch. */
  readonly timeUs: number
}

export interface TcpStream {
  readonly src: string
  readonly srcPort: number
  readonly dst: string
  readonly dstPort: number
  /** The payload bytes in sequence order, each byte once. */
  readonly data: Buffer
  readonly synSeen: boolean
  readonly finSeen: boolean
  readonly rstSeen: boolean
}

/** One TCP connection: `a` is the side that sent the first SYN (or the first packet seen). */
export interface TcpConnection {
  readonly a: TcpStream
  readonly b: TcpStream
}

const LINKTYPE_ETHERNET = 1
const LINKTYPE_LINUX_SLL = 113

export class PcapError extends Error {
  constructor(offset: number, msg: string) {
    super(`pcap offset ${offset}: ${msg}`)
    this.name = 'PcapError'
  }
}

/**
 * Parses a pcap file into TCP segments; non-TCP frames are skipped. A truncated last record (tcpdump still
 * writing) is ignored rather than an error, so a live capture can be read while it grows.
 */
export function parsePcap(file: Buffer): TcpSegment[] {
  if (file.length < 24) throw new PcapError(0, `file is ${file.length} bytes, shorter than the 24-byte global header`)
  const magic = file.readUInt32LE(0)
  let le: boolean
  let nano = false
  if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) le = true
  else if (magic === 0xd4c3b2a1 || magic === 0x4d3cb2a1) le = false
  else throw new PcapError(0, `magic 0x${magic.toString(16)} is not a pcap file (pcapng is not supported)`)
  const u32 = (o: number): number => (le ? file.readUInt32LE(o) : file.readUInt32BE(o))
  if (magic === 0xa1b23c4d || magic === 0x4d3cb2a1) nano = true
  const linktype = u32(20) & 0x0fffffff
  if (linktype !== LINKTYPE_ETHERNET && linktype !== LINKTYPE_LINUX_SLL) throw new PcapError(20, `link type ${linktype} is not Ethernet (1) or Linux SLL (113)`)
  const out: TcpSegment[] = []
  let off = 24
  while (off + 16 <= file.length) {
    const sec = u32(off)
    const frac = u32(off + 4)
    const incl = u32(off + 8)
    if (incl > 262144) throw new PcapError(off + 8, `record length ${incl} is implausible`)
    const start = off + 16
    if (start + incl > file.length) break
    const frame = file.subarray(start, start + incl)
    const seg = parseFrame(frame, linktype, start, sec * 1e6 + (nano ? Math.floor(frac / 1000) : frac))
    if (seg !== undefined) out.push(seg)
    off = start + incl
  }
  return out
}

function parseFrame(f: Buffer, linktype: number, base: number, timeUs: number): TcpSegment | undefined {
  let off: number
  let etherType: number
  if (linktype === LINKTYPE_ETHERNET) {
    if (f.length < 14) return undefined
    etherType = f.readUInt16BE(12)
    off = 14
    while (etherType === 0x8100 || etherType === 0x88a8) {
      if (f.length < off + 4) return undefined
      etherType = f.readUInt16BE(off + 2)
      off += 4
    }
  } else {
    if (f.length < 16) return undefined
    etherType = f.readUInt16BE(14)
    off = 16
  }
  let src: string
  let dst: string
  let end: number
  if (etherType === 0x0800) {
    if (f.length < off + 20) throw new PcapError(base + off, 'IPv4 header truncated (capture with a larger snaplen)')
    const ihl = (f[off]! & 0x0f) * 4
    if (f[off + 9] !== 6) return undefined
    const fragment = f.readUInt16BE(off + 6) & 0x3fff
    if (fragment !== 0) throw new PcapError(base + off + 6, 'fragmented IPv4 packet; reassembly of IP fragments is not supported')
    // Total length, not the frame length: Ethernet pads short frames and the padding is not TCP data.
    end = off + f.readUInt16BE(off + 2)
    src = ipv4(f, off + 12)
    dst = ipv4(f, off + 16)
    off += ihl
  } else if (etherType === 0x86dd) {
    if (f.length < off + 40) throw new PcapError(base + off, 'IPv6 header truncated')
    if (f[off + 6] !== 6) return undefined
    end = off + 40 + f.readUInt16BE(off + 4)
    src = ipv6(f, off + 8)
    dst = ipv6(f, off + 24)
    off += 40
  } else {
    return undefined
  }
  if (end > f.length) throw new PcapError(base + f.length, `packet cut short by the snaplen (${end - f.length} bytes missing)`)
  if (f.length < off + 20) throw new PcapError(base + off, 'TCP header truncated')
  const dataOff = (f[off + 12]! >> 4) * 4
  const flags = f[off + 13]!
  return {
    src,
    dst,
    srcPort: f.readUInt16BE(off),
    dstPort: f.readUInt16BE(off + 2),
    seq: f.readUInt32BE(off + 4),
    syn: (flags & 0x02) !== 0,
    fin: (flags & 0x01) !== 0,
    rst: (flags & 0x04) !== 0,
    payload: Buffer.from(f.subarray(off + dataOff, end)),
    timeUs,
  }
}

function ipv4(b: Buffer, o: number): string {
  return `${b[o]}.${b[o + 1]}.${b[o + 2]}.${b[o + 3]}`
}

function ipv6(b: Buffer, o: number): string {
  const groups: string[] = []
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(o + i).toString(16))
  // Compress the longest run of zero groups, as the daemons print addresses.
  let best = -1
  let bestLen = 0
  for (let i = 0; i < 8; ) {
    let j = i
    while (j < 8 && groups[j] === '0') j++
    if (j - i > bestLen && j - i > 1) [best, bestLen] = [i, j - i]
    i = j === i ? i + 1 : j
  }
  if (best < 0) return groups.join(':')
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`
}

const key = (s: { src: string; srcPort: number; dst: string; dstPort: number }): string => `${s.src}|${s.srcPort}|${s.dst}|${s.dstPort}`

/** Groups segments by connection and reassembles each direction. A hole in a stream is an error. */
export function reassemble(segments: readonly TcpSegment[]): TcpConnection[] {
  const dirs = new Map<string, TcpSegment[]>()
  const order: string[] = []
  for (const s of segments) {
    const k = key(s)
    let list = dirs.get(k)
    if (list === undefined) {
      list = []
      dirs.set(k, list)
      order.push(k)
    }
    list.push(s)
  }
  const done = new Set<string>()
  const conns: TcpConnection[] = []
  for (const k of order) {
    if (done.has(k)) continue
    const first = dirs.get(k)![0]!
    const rk = key({ src: first.dst, srcPort: first.dstPort, dst: first.src, dstPort: first.srcPort })
    done.add(k).add(rk)
    const here = dirs.get(k)!
    const back = dirs.get(rk) ?? []
    // The side whose SYN has no ACK-bearing peer SYN before it is the opener; the first seen is close enough.
    const aFirst = here.some((s) => s.syn) || !back.some((s) => s.syn)
    const [a, b] = aFirst ? [here, back] : [back, here]
    const aEnd = a[0] ?? first
    conns.push({ a: stream(a, aEnd), b: stream(b, { src: aEnd.dst, srcPort: aEnd.dstPort, dst: aEnd.src, dstPort: aEnd.srcPort }) })
  }
  return conns
}

function stream(segs: readonly TcpSegment[], ends: { src: string; srcPort: number; dst: string; dstPort: number }): TcpStream {
  const syn = segs.find((s) => s.syn)
  // Data starts one past the SYN's sequence number; without a SYN, at the lowest sequence seen.
  const isn = syn !== undefined ? (syn.seq + 1) >>> 0 : lowestSeq(segs)
  const pieces = segs
    .filter((s) => s.payload.length > 0)
    .map((s) => ({ rel: (s.seq - isn) >>> 0, payload: s.payload }))
    // >>> 0 turns "before the start" into a huge number; real streams here stay far below 2 GiB.
    .filter((p) => p.rel < 0x80000000)
    .sort((x, y) => x.rel - y.rel)
  const chunks: Buffer[] = []
  let next = 0
  for (const p of pieces) {
    const endRel = p.rel + p.payload.length
    if (endRel <= next) continue // pure retransmission
    if (p.rel > next) {
      throw new Error(`TCP ${ends.src}:${ends.srcPort} -> ${ends.dst}:${ends.dstPort}: bytes ${next}..${p.rel - 1} of the stream were never captured`)
    }
    chunks.push(p.payload.subarray(next - p.rel))
    next = endRel
  }
  return {
    ...ends,
    data: Buffer.concat(chunks),
    synSeen: syn !== undefined,
    finSeen: segs.some((s) => s.fin),
    rstSeen: segs.some((s) => s.rst),
  }
}

function lowestSeq(segs: readonly TcpSegment[]): number {
  const first = segs[0]
  if (first === undefined) return 0
  // Lowest in sequence space relative to the first segment, so a wrap past 2^32 is still ordered right.
  let low = first.seq
  for (const s of segs) if (((s.seq - low) | 0) < 0) low = s.seq
  return low
}

/** The one connection between two addresses that carried data, or a clear error when there is none or several. */
export function connectionBetween(conns: readonly TcpConnection[], x: string, y: string): TcpConnection {
  const found = conns.filter(
    (c) => ((c.a.src === x && c.a.dst === y) || (c.a.src === y && c.a.dst === x)) && c.a.data.length + c.b.data.length > 0,
  )
  if (found.length !== 1) throw new Error(`expected one TCP connection with data between ${x} and ${y}, found ${found.length}`)
  return found[0]!
}

/** The stream a given address sent within a connection. */
export function sentBy(conn: TcpConnection, address: string): Buffer {
  if (conn.a.src === address) return conn.a.data
  if (conn.b.src === address) return conn.b.data
  throw new Error(`${address} is not an end of connection ${conn.a.src} <-> ${conn.b.src}`)
}
