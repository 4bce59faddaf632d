// Address text: RFC 5952 output and strict parsing, each against a reference on valid and malformed text.
import { SocketAddress } from 'node:net'
import t from 'tap'
import { formatIpv6, parseIpv4, parseIpv6 } from '../../net/index.js'

t.test('IPv4 parsing accepts exactly four decimal octets', async (t) => {
  const table: [string, number | undefined][] = [
    ['192.0.2.1', 0xc0000201],
    ['0.0.0.0', 0],
    ['255.255.255.255', 0xffffffff],
    ['256.0.0.1', undefined],
    ['1.2.3', undefined],
    ['1.2.3.4.5', undefined],
    ['1..2.3', undefined],
    ['1.2.3.4 ', undefined],
    ['', undefined],
    ['1234.0.0.1', undefined],
  ]
  for (const [text, want] of table) t.equal(parseIpv4(text), want, JSON.stringify(text))
})

t.test('IPv6 text round trips in RFC 5952 form', async (t) => {
  const table: [string, string][] = [
    ['2001:db8::1', '2001:db8::1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['::', '::'],
    ['::1', '::1'],
    ['fe80::c0ff:fe00:201', 'fe80::c0ff:fe00:201'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['::ffff:192.0.2.1', '::ffff:192.0.2.1'],
    ['2001:DB8::A', '2001:db8::a'],
  ]
  for (const [text, want] of table) t.equal(formatIpv6(parseIpv6(text)!), want, text)
  for (const bad of ['1::2::3', '2001:db8::g', '1:2:3:4:5:6:7:8:9', ':::', '12345::1', '']) t.equal(parseIpv6(bad), undefined, bad)
})

// Oracles the fast forms must agree with on every input, so the text felix keys and writes routes by is
// RFC 5952's. Formatting: libuv's inet_ntop (node:net's SocketAddress), which also writes the deprecated
// IPv4-compatible form (six zero groups, then a non-zero one) as dotted quad, where pinto keeps hex.
function referenceFormatIpv6(bytes: Uint8Array): string {
  const words = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0))
  if (words.slice(0, 6).every((w) => w === 0) && words[6] !== 0) return `::${words[6]!.toString(16)}:${words[7]!.toString(16)}`
  return new SocketAddress({ address: words.map((w) => w.toString(16)).join(':'), family: 'ipv6' }).address
}

// Parsing: the previous form (arrays, split and a regular expression).
function referenceParseIpv6(text: string): Uint8Array | undefined {
  if (text.length === 0 || text.length > 45) return undefined
  let head = text
  let tail4: number | undefined
  const lastColon = text.lastIndexOf(':')
  if (text.indexOf('.', lastColon) >= 0) {
    tail4 = parseIpv4(text.slice(lastColon + 1))
    if (tail4 === undefined) return undefined
    head = text.slice(0, lastColon + 1) + '0:0'
  }
  const halves = head.split('::')
  if (halves.length > 2) return undefined
  const parse = (s: string): number[] | undefined => {
    if (s === '') return []
    const out: number[] = []
    for (const g of s.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined
      out.push(parseInt(g, 16))
    }
    return out
  }
  const left = parse(halves[0] ?? '')
  const right = halves.length === 2 ? parse(halves[1] ?? '') : []
  if (left === undefined || right === undefined) return undefined
  const total = left.length + right.length
  if (halves.length === 2 ? total > 7 : total !== 8) return undefined
  const groups = [...left, ...new Array<number>(8 - total).fill(0), ...right]
  const bytes = new Uint8Array(16)
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8
    bytes[i * 2 + 1] = g & 255
  })
  if (tail4 !== undefined) bytes.set([tail4 >>> 24, (tail4 >>> 16) & 255, (tail4 >>> 8) & 255, tail4 & 255], 12)
  return bytes
}

/** A small deterministic generator (xorshift32), so a failure names a reproducible input. */
function rng(seed: number): () => number {
  let x = seed
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 0x100000000
  }
}

t.test('IPv6 formatting agrees with the reference on zero runs, ties, mapped addresses and offsets', async (t) => {
  const r = rng(0x5eed)
  let bad = 0
  for (let n = 0; n < 20_000 && bad < 5; n++) {
    const bytes = new Uint8Array(20)
    // Mostly zero groups, so runs of every length and ties between them come up often.
    for (let g = 0; g < 8; g++) {
      const v = r() < 0.55 ? 0 : r() < 0.2 ? 0xffff : Math.floor(r() * 0x10000) >>> (r() < 0.5 ? 8 : 0)
      bytes[2 + 2 * g] = v >> 8
      bytes[3 + 2 * g] = v & 255
    }
    if (n % 7 === 0) bytes.set([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], 2)
    const want = referenceFormatIpv6(bytes.subarray(2, 18))
    const got = formatIpv6(bytes, 2)
    if (got !== want) {
      bad++
      t.fail(`${Buffer.from(bytes.subarray(2, 18)).toString('hex')}: ${got}, reference ${want}`)
    }
    const back = parseIpv6(got)
    if ((back === undefined || Buffer.compare(Buffer.from(back), Buffer.from(bytes.subarray(2, 18))) !== 0) && bad++ < 5) t.fail(`${got} does not parse back`)
  }
  t.equal(bad, 0, 'every address formats as the reference does and parses back')
  t.equal(formatIpv6(Uint8Array.from([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1])), '2001:db8::1:0:0:1', 'the first of two equal runs is compressed')
  t.equal(formatIpv6(Uint8Array.from([0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])), '1::')
  t.equal(formatIpv6(Uint8Array.from([0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0])), '1:0:1:0:1:0:1:0', 'a single zero group stays')
})

t.test('IPv6 parsing agrees with the reference on valid and malformed text', async (t) => {
  const r = rng(0xc0ffee)
  const alphabet = '0123456789abcdefABCDEF::::..g '
  const inputs: string[] = [
    '::', '::1', '1::', '1:', ':1', ':::', '1:::2', '::1:2:3:4:5:6:7', '::1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:8::',
    '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:7:1.2.3.4', '::1.2.3.4', '1.2.3.4', '1.2.3.4::',
    '::ffff:192.0.2.1', '::ffff:192.0.2.256', '::ffff:1.2.3', '::12345', '::abcd', '::ABCD', '::00001', 'fe80::1%eth0',
    '::1.2.3.04', '1::2:3.4.5.6', '::1.2.3.4x', '2001:db8::/64', `${'1:'.repeat(22)}1`,
  ]
  for (let n = 0; n < 30_000; n++) {
    const len = 1 + Math.floor(r() * 20)
    let s = ''
    for (let i = 0; i < len; i++) s += alphabet[Math.floor(r() * alphabet.length)]
    inputs.push(s)
    // And valid text with one character changed, dropped or doubled.
    const bytes = new Uint8Array(16).map(() => (r() < 0.5 ? 0 : Math.floor(r() * 256)))
    const text = formatIpv6(bytes)
    const k = Math.floor(r() * text.length)
    inputs.push(text, text.slice(0, k) + text.slice(k + 1), text.slice(0, k) + text[k] + text.slice(k), text.slice(0, k) + alphabet[Math.floor(r() * alphabet.length)] + text.slice(k + 1))
  }
  let bad = 0
  for (const s of inputs) {
    const want = referenceParseIpv6(s)
    const got = parseIpv6(s)
    const same = want === undefined ? got === undefined : got !== undefined && Buffer.compare(Buffer.from(got), Buffer.from(want)) === 0
    if (!same && bad++ < 5) t.fail(`${JSON.stringify(s)}: ${got && Buffer.from(got).toString('hex')}, reference ${want && Buffer.from(want).toString('hex')}`)
  }
  t.equal(bad, 0, `${inputs.length} inputs agree`)
})
