// The node-path bench's table: exactly N distinct prefixes inside the ranges it names, in about N/20
// attribute sets that are all distinct, churn prefixes outside the table, and every set encodable into
// UPDATEs that decode back to the same prefixes.
import t from 'tap'
import { Afi, Framer, Safi, codecOptions, decodeMessage, formatPrefix, packUpdates, type UpdateMessage } from '../../bgp/codec/index.js'
import { churnPrefix, routeMix } from '../../bench/route-mix.js'

const inV4Table = (text: string): boolean => text.startsWith('10.')
// Not in 2001:db8:fffe::/48 (churn) nor 2001:db8:ffff::/48 (the nodes' addresses).
const inV6Table = (text: string): boolean => text.startsWith('2001:db8:') && !/^2001:db8:fff[ef]:/.test(text)

for (const [family, count] of [['ipv4', 10_000], ['ipv4', 100_000], ['ipv6', 20_000]] as const) {
  t.test(`${family} ${count}`, async (t) => {
    const mix = routeMix(family, count, '192.0.2.2')
    const all = mix.sets.flatMap((s) => s.prefixes.map(formatPrefix))
    t.equal(all.length, count, 'every prefix once')
    t.equal(new Set(all).size, count, 'no prefix twice')
    t.ok(all.every(family === 'ipv4' ? inV4Table : inV6Table), 'inside the ranges the table names')
    t.ok(mix.sets.length > count / 30 && mix.sets.length < count / 12, `about N/20 attribute sets (${mix.sets.length})`)
    t.equal(new Set(mix.sets.map((s) => JSON.stringify(s.attributes))).size, mix.sets.length, 'every set distinct')
    t.ok(mix.sets.some((s) => s.prefixes.length === 1) && mix.sets.some((s) => s.prefixes.length > 60), 'skewed set sizes')
    const lengths = new Set(mix.sets.flatMap((s) => s.prefixes.map((p) => p.len)))
    t.ok(lengths.size >= (family === 'ipv4' ? 8 : 2), `mixed lengths (${[...lengths].sort((a, b) => a - b).join(',')})`)
    const held = new Set(all)
    t.notOk([0, 1, 499, 65535].some((k) => held.has(formatPrefix(churnPrefix(family, k)))), 'churn prefixes are not in the table')
  })
}

t.test('the sets encode and decode back to the same prefixes', async (t) => {
  for (const family of ['ipv4', 'ipv6'] as const) {
    const mix = routeMix(family, 3000, '192.0.2.2')
    const opts = codecOptions({ as4: true, extendedMessage: false })
    const afi = family === 'ipv4' ? Afi.IPV4 : Afi.IPV6
    const framer = new Framer()
    const back: string[] = []
    for (const s of mix.sets) {
      const msgs = packUpdates({ afi, safi: Safi.UNICAST, attributes: s.attributes, announce: s.prefixes, ...(family === 'ipv6' ? { nextHop: ['2001:db8:ffff::2'] } : {}) }, opts)
      for (const frame of msgs.flatMap((m) => framer.push(m))) {
        const u = decodeMessage(frame, opts) as UpdateMessage
        t.equal(u.error, undefined)
        back.push(...(family === 'ipv4' ? u.nlri : (u.mpReach?.nlri ?? [])).map(formatPrefix))
      }
    }
    t.same(back.sort(), mix.sets.flatMap((s) => s.prefixes.map(formatPrefix)).sort(), family)
  }
})
