// UPDATE packing: the fewest messages that fit, every prefix exactly once, within the negotiated
// size, for IPv4 and IPv6, with add-path and with extended message; and attribute interning.
import t from 'tap'
import {
  AttributeInterner,
  Framer,
  IPV4_UNICAST,
  IPV6_UNICAST,
  attributesKey,
  codecOptions,
  decodeMessage,
  formatPrefix,
  ipv4Prefix,
  ipv6Prefix,
  nlriSize,
  packUpdates,
  type CodecOptions,
  type Prefix,
  type UpdateMessage,
} from '../../../bgp/index.js'

const attrs = { origin: 0 as const, asPath: [{ type: 2 as const, asns: [65001] }], nextHop: '192.0.2.1', communities: [0xfde90064] }

function v4(n: number, len = 24): Prefix[] {
  return Array.from({ length: n }, (_, i) => ipv4Prefix(((198 << 24) >>> 0) + (18 << 16) + i * (1 << (32 - len)), len))
}
function v6(n: number): Prefix[] {
  return Array.from({ length: n }, (_, i) => {
    const a = new Uint8Array(16)
    a.set([0x20, 0x01, 0x0d, 0xb8, i >> 8, i & 255])
    return ipv6Prefix(a, 48)
  })
}

function decodeAll(msgs: Buffer[], opts: CodecOptions): UpdateMessage[] {
  const f = new Framer()
  f.setExtendedMessage(opts.extendedMessage)
  return msgs.flatMap((m) => f.push(m)).map((fr) => decodeMessage(fr, opts) as UpdateMessage)
}

for (const [name, opts] of [
  ['plain', codecOptions()],
  ['add-path', codecOptions({ addPath: new Set([IPV4_UNICAST, IPV6_UNICAST]) })],
  ['extended message', codecOptions({ extendedMessage: true })],
] as const) {
  t.test(`IPv4 announce and withdraw, ${name}`, async (t) => {
    const prefixes = v4(5000)
    const max = opts.extendedMessage ? 65535 : 4096
    const msgs = packUpdates({ afi: 1, attributes: attrs, announce: prefixes }, opts)
    const perPrefix = nlriSize(prefixes[0]!, opts.addPath.size > 0)
    const fixed = msgs[0]!.length - Math.floor((msgs[0]!.length - 23) / perPrefix) * perPrefix
    const room = max - fixed
    t.equal(msgs.length, Math.ceil((prefixes.length * perPrefix) / (room - (room % perPrefix))), 'the fewest messages')
    t.ok(msgs.every((m) => m.length <= max), 'each within the size limit')
    const decoded = decodeAll(msgs, opts)
    t.same(decoded.flatMap((u) => u.nlri.map(formatPrefix)), prefixes.map(formatPrefix), 'every prefix once, in order')
    t.ok(decoded.every((u) => u.attributes.communities?.[0] === 0xfde90064 && u.error === undefined))
    const wd = packUpdates({ afi: 1, withdraw: prefixes }, opts)
    t.same(decodeAll(wd, opts).flatMap((u) => u.withdrawn.map(formatPrefix)), prefixes.map(formatPrefix))
  })

  t.test(`IPv6 announce and withdraw, ${name}`, async (t) => {
    const prefixes = v6(3000)
    const msgs = packUpdates({ afi: 2, attributes: { origin: 0, asPath: [] }, nextHop: ['2001:db8::1', 'fe80::1'], announce: prefixes }, opts)
    t.ok(msgs.every((m) => m.length <= (opts.extendedMessage ? 65535 : 4096)))
    const decoded = decodeAll(msgs, opts)
    t.same(decoded.flatMap((u) => u.mpReach!.nlri.map(formatPrefix)), prefixes.map(formatPrefix))
    t.same(decoded[0]!.mpReach!.nextHop, ['2001:db8::1', 'fe80::1'])
    const wd = decodeAll(packUpdates({ afi: 2, withdraw: prefixes }, opts), opts)
    t.same(wd.flatMap((u) => u.mpUnreach!.withdrawn.map(formatPrefix)), prefixes.map(formatPrefix))
  })
}

t.test('one UPDATE carries one of withdrawn, NLRI, MP_REACH or MP_UNREACH (RFC 7606 §5.1)', async (t) => {
  const opts = codecOptions()
  const msgs = packUpdates({ afi: 1, attributes: attrs, announce: v4(3), withdraw: v4(2, 16) }, opts)
  const d = decodeAll(msgs, opts)
  t.same(d.map((u) => [u.withdrawn.length, u.nlri.length]), [[2, 0], [0, 3]])
})

t.test('attributes too large for a single prefix are refused, not sent broken', async (t) => {
  const huge = { ...attrs, communities: Array.from({ length: 1100 }, (_, i) => i) }
  t.throws(() => packUpdates({ afi: 1, attributes: huge, announce: v4(1) }, codecOptions()), /too few for one prefix/)
})

t.test('interning: equal sets share one copy; different sets do not', async (t) => {
  const interner = new AttributeInterner()
  const a = interner.intern({ ...attrs })
  const b = interner.intern({ nextHop: '192.0.2.1', communities: [0xfde90064], origin: 0, asPath: [{ type: 2, asns: [65001] }] })
  const c = interner.intern({ ...attrs, med: 5 })
  const d = interner.intern({ origin: 0, asPath: [] }, ['2001:db8::1'])
  const e = interner.intern({ origin: 0, asPath: [] }, ['2001:db8::2'])
  t.equal(a, b, 'same set, same object')
  t.not(a, c)
  t.not(d, e, 'the next hop is part of the identity')
  t.equal(interner.size, 4)
  t.equal(a.refs, 2)
  interner.release(a)
  interner.release(b)
  t.equal(interner.size, 3, 'forgotten when the last holder releases it')
  t.equal(attributesKey(attrs), attributesKey({ ...attrs }))
})

t.test('toward a 2-octet peer: AS_TRANS in AS_PATH and AGGREGATOR, the real values in AS4_PATH and AS4_AGGREGATOR (RFC 6793 §4.2.2)', async (t) => {
  const two = codecOptions({ as4: false })
  const wide = { ...attrs, asPath: [{ type: 2 as const, asns: [4200000001, 65001] }], aggregator: { asn: 4200000002, address: '192.0.2.9' } }
  const [m] = decodeAll(packUpdates({ afi: 1, announce: v4(1), attributes: wide }, two), two)
  t.same(m!.attributes.asPath, [{ type: 2, asns: [23456, 65001] }], 'AS_PATH with AS_TRANS for the wide AS')
  t.same(m!.attributes.as4Path, [{ type: 2, asns: [4200000001, 65001] }], 'AS4_PATH with the real path')
  t.same(m!.attributes.aggregator, { asn: 23456, address: '192.0.2.9' })
  t.same(m!.attributes.as4Aggregator, { asn: 4200000002, address: '192.0.2.9' })
  const [narrow] = decodeAll(packUpdates({ afi: 1, announce: v4(1), attributes: attrs }, two), two)
  t.equal(narrow!.attributes.as4Path, undefined, 'no AS4_PATH when every AS fits in two octets')
  const [four] = decodeAll(packUpdates({ afi: 1, announce: v4(1), attributes: wide }, codecOptions()), codecOptions())
  t.same(four!.attributes.asPath, wide.asPath, 'between 4-octet speakers: the path as it is')
  t.equal(four!.attributes.as4Path, undefined)
})
