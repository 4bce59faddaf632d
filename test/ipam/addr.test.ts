// Address and CIDR arithmetic: parsing, RFC 5952 formatting, masking and naming, table-driven.
import t from 'tap'
import { AddrError, cidrCovers, cidrName, cidrSize, formatAddr, formatCidr, parseAddr, parseCidr } from '../../ipam/addr.js'

t.test('addresses round-trip to their canonical text', async (t) => {
  const cases: [string, string][] = [
    ['198.18.0.1', '198.18.0.1'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['2001:db8::1', '2001:db8::1'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // RFC 5952 §4.2.3: the first of equal runs
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'], // the longest run
    ['2001:db8:1:1:1:1:1:0', '2001:db8:1:1:1:1:1:0'], // a single zero group is not compressed
    ['::ffff:192.0.2.1', '::ffff:192.0.2.1'] /* RFC 5952 §5: IPv4-mapped keeps its dotted tail */,
  ]
  for (const [input, want] of cases) {
    const a = parseAddr(input)
    t.equal(formatAddr(a.family, a.value), want, input)
  }
})

t.test('bad addresses name the field', async (t) => {
  for (const bad of ['', '1.2.3', '1.2.3.4.5', '256.0.0.1', '01.2.3.4', '1:2:3:4:5:6:7:8:9', '1::2::3', 'g::1', '1:2:3:4:5:6:7::8', ':1', 'abc']) {
    t.throws(() => parseAddr(bad, 'spec.ip'), { name: 'AddrError', field: 'spec.ip' }, JSON.stringify(bad))
  }
})

t.test('CIDRs: strict masking, sizes, cover, names', async (t) => {
  t.equal(formatCidr(parseCidr('198.18.0.0/15')), '198.18.0.0/15')
  t.equal(cidrSize(parseCidr('198.18.0.0/26')), 64n)
  t.equal(cidrSize(parseCidr('2001:db8::/122')), 64n)
  t.equal(cidrName(parseCidr('10.0.0.0/26')), '10-0-0-0-26')
  t.equal(cidrName(parseCidr('2001:db8::/122')), '2001-db8---122')
  t.ok(cidrCovers(parseCidr('198.18.0.0/15'), parseCidr('198.19.3.64/26')))
  t.notOk(cidrCovers(parseCidr('198.18.0.0/16'), parseCidr('198.19.0.0/26')))
  t.notOk(cidrCovers(parseCidr('198.18.0.0/16'), parseCidr('2001:db8::/122')))
  const bad: [string, RegExp][] = [
    ['198.18.0.1/24', /host bits set \(the network is 198\.18\.0\.0\/24\)/],
    ['198.18.0.0', /no \/prefix-length/],
    ['198.18.0.0/33', /prefix length "33"/],
    ['2001:db8::/129', /prefix length "129"/],
    ['198.18.0.0/-1', /prefix length/],
  ]
  for (const [input, msg] of bad) {
    const err = t.throws(() => parseCidr(input, 'spec.cidr')) as unknown
    t.ok(err instanceof AddrError, input)
    t.match((err as Error).message, /^spec\.cidr: /)
    t.match((err as Error).message, msg)
  }
})
