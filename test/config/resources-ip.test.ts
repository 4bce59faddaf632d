// The address arithmetic under pool validation: strict IPv4/IPv6 parsing (Go's rules: no leading
// zeros, no zones), canonical formatting, network-address checks and overlap at the edges.
import t from 'tap'
import { cidrContainsIP, cidrsOverlap, formatCIDR, formatIP, parseCIDR, parseIP, type CIDR } from '../../config/resources/index.js'

const cidr = (text: string): CIDR => {
  const c = parseCIDR(text)
  if (typeof c === 'string') throw new Error(c)
  return c
}

t.test('addresses parse strictly and format canonically', async (t) => {
  const good: [string, string][] = [
    ['192.0.2.1', '192.0.2.1'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['2001:db8::1', '2001:db8::1'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['::', '::'],
    ['::1', '::1'],
    ['fe80::', 'fe80::'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:0db8:0001:0000:0000:0000:0000:0000', '2001:db8:1::'],
    ['::ffff:192.0.2.1', '::ffff:192.0.2.1'] /* RFC 5952 §5: IPv4-mapped keeps its dotted tail */,
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
  ]
  for (const [text, canon] of good) {
    const ip = parseIP(text)
    t.ok(ip, text)
    if (ip !== undefined) t.equal(formatIP(ip.version, ip.value), canon, text)
  }
  for (const bad of ['', '192.0.2', '192.0.2.1.5', '192.0.2.256', '192.0.02.1', '1:2:3:4:5:6:7:8:9', '2001:db8:::1', '2001:db8::1::2', 'fe80::1%eth0', '::ffff:192.0.2', 'g::1', '1.2.3.4::']) {
    t.equal(parseIP(bad), undefined, `${JSON.stringify(bad)} refused`)
  }
})

t.test('CIDRs: network address, bare addresses only when allowed', async (t) => {
  const c = cidr('198.18.5.7/16')
  t.equal(formatCIDR(c), '198.18.0.0/16')
  t.not(c.addr, c.network, 'host bits are visible to the validator')
  t.type(parseCIDR('198.18.0.0'), 'string', 'bare address is not a CIDR by default')
  t.equal(formatCIDR(parseCIDR('198.18.0.1', true) as CIDR), '198.18.0.1/32')
  t.equal(formatCIDR(parseCIDR('2001:db8::1', true) as CIDR), '2001:db8::1/128')
  t.equal(formatCIDR(cidr('0.0.0.0/0')), '0.0.0.0/0')
  t.equal(formatCIDR(cidr('2001:db8::ff/120')), '2001:db8::/120')
  for (const bad of ['198.18.0.0/33', '198.18.0.0/', '198.18.0.0/-1', '198.18.0.0/016', '2001:db8::/129', 'x/8']) {
    t.type(parseCIDR(bad), 'string', bad)
  }
})

t.test('overlap and containment at the edges', async (t) => {
  t.ok(cidrsOverlap(cidr('198.18.0.0/16'), cidr('198.18.255.255/32')))
  t.notOk(cidrsOverlap(cidr('198.18.0.0/16'), cidr('198.19.0.0/32')))
  t.ok(cidrsOverlap(cidr('0.0.0.0/0'), cidr('203.0.113.0/24')))
  t.notOk(cidrsOverlap(cidr('0.0.0.0/0'), cidr('::/0')), 'families never overlap')
  t.ok(cidrsOverlap(cidr('2001:db8::/32'), cidr('2001:db8:ffff:ffff::/64')))
  t.notOk(cidrsOverlap(cidr('2001:db8::/33'), cidr('2001:db8:8000::/33')))
  const ip = parseIP('198.18.0.63')
  if (ip !== undefined) {
    t.ok(cidrContainsIP(cidr('198.18.0.0/26'), ip))
    t.notOk(cidrContainsIP(cidr('198.18.0.64/26'), ip))
  }
})
