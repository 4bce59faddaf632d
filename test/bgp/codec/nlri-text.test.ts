// The codec's prefixes from text and bytes: host bits cleared, at every length, and what is wrong named.
import t from 'tap'
import { formatPrefix, ipv6Prefix, parsePrefix } from '../../../bgp/index.js'
import { formatIpv6 } from '../../../net/index.js'
import { Rng } from '../../harness/random.js'

t.test('prefixes clear host bits and name what is wrong', async (t) => {
  t.equal(formatPrefix(parsePrefix('198.18.0.77/26')), '198.18.0.64/26')
  t.equal(formatPrefix(parsePrefix('2001:db8:ffff::/33')), '2001:db8:8000::/33')
  t.equal(formatPrefix(parsePrefix('192.0.2.1')), '192.0.2.1/32')
  t.throws(() => parsePrefix('192.0.2.0/33'), /bad prefix length/)
  t.throws(() => parsePrefix('example/24'), /not an IPv4 or IPv6 prefix/)
})

t.test('an IPv6 prefix keeps its network bits and clears the rest, at every length', async (t) => {
  const r = new Rng(0xb175)
  let bad = 0
  for (let n = 0; n < 50; n++) {
    const addr = new Uint8Array(16).map(() => Math.floor(r.float() * 256))
    const whole = Uint8Array.from(addr)
    for (let len = 0; len <= 128; len++) {
      const want = new Uint8Array(16)
      for (let bit = 0; bit < len; bit++) want[bit >> 3]! |= whole[bit >> 3]! & (0x80 >> (bit & 7))
      const p = ipv6Prefix(addr, len, 7)
      if ((Buffer.compare(Buffer.from(p.addr), Buffer.from(want)) !== 0 || p.len !== len || p.pathId !== 7 || p.addr === addr) && bad++ < 5) t.fail(`${formatIpv6(whole)}/${len}: ${formatIpv6(p.addr)}`)
    }
    t.same(addr, whole, 'the address it was made from is left as it was')
  }
  t.equal(bad, 0, 'every length of 50 addresses')
})
