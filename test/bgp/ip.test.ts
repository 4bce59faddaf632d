// Address and prefix text: RFC 5952 output, strict parsing, host bits cleared.
import t from 'tap'
import { formatIpv6, parseIpv4, parseIpv6, parsePrefix, formatPrefix } from '../../bgp/index.js'

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

t.test('prefixes clear host bits and name what is wrong', async (t) => {
  t.equal(formatPrefix(parsePrefix('198.18.0.77/26')), '198.18.0.64/26')
  t.equal(formatPrefix(parsePrefix('2001:db8:ffff::/33')), '2001:db8:8000::/33')
  t.equal(formatPrefix(parsePrefix('192.0.2.1')), '192.0.2.1/32')
  t.throws(() => parsePrefix('192.0.2.0/33'), /bad prefix length/)
  t.throws(() => parsePrefix('example/24'), /not an IPv4 or IPv6 prefix/)
})
