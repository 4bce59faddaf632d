// The IP/CIDR module, table-driven: what parses and its canonical text, what is refused and the exact
// message naming the caller's field, the arithmetic IPAM uses, and readCidr/readAddr held equal to
// parseCidr/parseAddr (results and errors) on canonical, odd and random text.
import t from 'tap'
import {
  AddrError,
  addrOrdinal,
  cidrContains,
  cidrCovers,
  cidrLast,
  cidrName,
  cidrSize,
  cidrsOverlap,
  compareAddr,
  compareCidr,
  formatAddr,
  formatCidr,
  maskCidr,
  nthAddr,
  parseAddr,
  parseCidr,
  parseIfAddr,
  readAddr,
  readCidr,
  readIpv4Prefix,
  type Cidr,
} from '../../net/index.js'

const thrown = (fn: () => unknown): AddrError => {
  try {
    fn()
  } catch (e) {
    if (e instanceof AddrError) return e
    throw e
  }
  throw new Error('did not throw')
}

t.test('addresses: accepted forms and their canonical text', async (t) => {
  const cases: [string, 4 | 6, string][] = [
    ['192.0.2.1', 4, '192.0.2.1'],
    ['0.0.0.0', 4, '0.0.0.0'],
    ['255.255.255.255', 4, '255.255.255.255'],
    ['2001:db8::1', 6, '2001:db8::1'],
    ['2001:DB8:0:0:0:0:0:1', 6, '2001:db8::1'],
    ['2001:0db8:0001:0000:0000:0000:0000:0000', 6, '2001:db8:1::'],
    ['::', 6, '::'],
    ['::1', 6, '::1'],
    ['1::', 6, '1::'],
    ['fe80::', 6, 'fe80::'],
    ['2001:db8:0:0:1:0:0:1', 6, '2001:db8::1:0:0:1'], // RFC 5952 §4.2.3: the first of equal runs
    ['2001:0:0:1:0:0:0:1', 6, '2001:0:0:1::1'], // the longest run
    ['2001:db8:1:1:1:1:1:0', 6, '2001:db8:1:1:1:1:1:0'], // one zero group is not compressed
    ['1:2:3:4:5:6:7:8', 6, '1:2:3:4:5:6:7:8'],
    ['::ffff:192.0.2.1', 6, '::ffff:192.0.2.1'], // IPv4-mapped: IPv6, and RFC 5952 §5 keeps the dotted tail
    ['::ffff:c000:201', 6, '::ffff:192.0.2.1'],
  ]
  for (const [text, family, canon] of cases) {
    const a = parseAddr(text, 'spec.ip')
    t.equal(a.family, family, `${text} family`)
    t.equal(formatAddr(a.family, a.value), canon, text)
  }
  t.equal(parseAddr('::ffff:192.0.2.1').value, 0xffffc0000201n, 'the mapped address is ::ffff:0:0/96 plus the IPv4 value')
})

t.test('addresses: refused, naming the field', async (t) => {
  const not = (s: string): string => `spec.ip: ${JSON.stringify(s)} is not an IPv4 or IPv6 address`
  const cases: [string, string][] = [
    ['', not('')],
    ['1.2.3', not('1.2.3')],
    ['1.2.3.4.5', not('1.2.3.4.5')],
    ['256.0.0.1', not('256.0.0.1')],
    [' 192.0.2.1', not(' 192.0.2.1')],
    ['192.0.2.1 ', not('192.0.2.1 ')],
    ['0x1.2.3.4', not('0x1.2.3.4')],
    ['abc', not('abc')],
    ['1:2:3:4:5:6:7:8:9', not('1:2:3:4:5:6:7:8:9')],
    ['1::2::3', not('1::2::3')],
    ['2001:db8:::1', not('2001:db8:::1')],
    ['g::1', not('g::1')],
    ['2001:db8::00001', not('2001:db8::00001')],
    ['[2001:db8::1]', not('[2001:db8::1]')],
    ['::ffff:192.0.2', not('::ffff:192.0.2')],
    ['1.2.3.4::', not('1.2.3.4::')],
    [':1', not(':1')],
    ['1:2:3:4:5:6:7::8', not('1:2:3:4:5:6:7::8')],
    ['1::2:3:4:5:6:7:8', not('1::2:3:4:5:6:7:8')],
    ['1:2:3:4:5:6:7:1.2.3.4', not('1:2:3:4:5:6:7:1.2.3.4')],
    ['010.0.0.1', 'spec.ip: "010.0.0.1" has an octet with a leading zero (010), which some parsers read as octal; write 10'],
    ['192.0.2.01', 'spec.ip: "192.0.2.01" has an octet with a leading zero (01), which some parsers read as octal; write 1'],
    ['::ffff:192.0.02.1', 'spec.ip: "::ffff:192.0.02.1" has an octet with a leading zero (02), which some parsers read as octal; write 2'],
    ['fe80::1%eth0', 'spec.ip: "fe80::1%eth0" has a zone index (%eth0); a scoped address is not accepted here'],
  ]
  for (const [text, message] of cases) {
    const e = thrown(() => parseAddr(text, 'spec.ip'))
    t.equal(e.message, message, JSON.stringify(text))
    t.equal(e.field, 'spec.ip')
  }
  t.equal(thrown(() => parseAddr('2001:db8::1', 'spec.bgp.ipv4Address', { family: 4 })).message, 'spec.bgp.ipv4Address: "2001:db8::1" is not an IPv4 address')
})

t.test('CIDRs: networks at every edge length', async (t) => {
  const cases: [string, string, bigint][] = [
    ['0.0.0.0/0', '0.0.0.0/0', 1n << 32n],
    ['198.18.0.0/15', '198.18.0.0/15', 1n << 17n],
    ['198.18.0.1/32', '198.18.0.1/32', 1n],
    ['::/0', '::/0', 1n << 128n],
    ['2001:DB8::/32', '2001:db8::/32', 1n << 96n],
    ['2001:db8::1/128', '2001:db8::1/128', 1n],
    ['::ffff:192.0.2.0/120', '::ffff:192.0.2.0/120', 256n],
  ]
  for (const [text, canon, size] of cases) {
    const c = parseCidr(text, 'spec.cidr')
    t.equal(formatCidr(c), canon, text)
    t.equal(cidrSize(c), size, `${text} size`)
  }
  t.equal(formatCidr(parseCidr('198.18.0.1', 'x', { bare: true })), '198.18.0.1/32', 'a bare address when allowed')
  t.equal(formatCidr(parseCidr('2001:db8::1', 'x', { bare: true })), '2001:db8::1/128')
})

t.test('CIDRs: refused, naming the field', async (t) => {
  const cases: [string, string, { family?: 4 | 6; bare?: boolean }?][] = [
    ['10.0.0.1/8', 'spec.cidr: "10.0.0.1/8" has host bits set (the network is 10.0.0.0/8)'],
    ['2001:db8::1/64', 'spec.cidr: "2001:db8::1/64" has host bits set (the network is 2001:db8::/64)'],
    ['0.0.0.1/0', 'spec.cidr: "0.0.0.1/0" has host bits set (the network is 0.0.0.0/0)'],
    ['198.18.0.0', 'spec.cidr: "198.18.0.0" is not a CIDR (expected <address>/<prefix length>)'],
    ['198.18.0.0/33', 'spec.cidr: "198.18.0.0/33" has an invalid prefix length (0-32 for IPv4)'],
    ['2001:db8::/129', 'spec.cidr: "2001:db8::/129" has an invalid prefix length (0-128 for IPv6)'],
    ['198.18.0.0/', 'spec.cidr: "198.18.0.0/" has an invalid prefix length (0-32 for IPv4)'],
    ['198.18.0.0/-1', 'spec.cidr: "198.18.0.0/-1" has an invalid prefix length (0-32 for IPv4)'],
    ['198.18.0.0/016', 'spec.cidr: "198.18.0.0/016" has an invalid prefix length (0-32 for IPv4)'],
    ['198.18.0.0/1e1', 'spec.cidr: "198.18.0.0/1e1" has an invalid prefix length (0-32 for IPv4)'],
    ['198.18.0.0/8/8', 'spec.cidr: "198.18.0.0/8/8" has an invalid prefix length (0-32 for IPv4)'],
    ['198.0.0.0/+8', 'spec.cidr: "198.0.0.0/+8" has an invalid prefix length (0-32 for IPv4)'],
    ['198.0.0.0/ 8', 'spec.cidr: "198.0.0.0/ 8" has an invalid prefix length (0-32 for IPv4)'],
    ['198.0.0.0/8 ', 'spec.cidr: "198.0.0.0/8 " has an invalid prefix length (0-32 for IPv4)'],
    ['198.0.0.0/0x8', 'spec.cidr: "198.0.0.0/0x8" has an invalid prefix length (0-32 for IPv4)'],
    ['0.0.0.0/-0', 'spec.cidr: "0.0.0.0/-0" has an invalid prefix length (0-32 for IPv4)'],
    ['2001:db8::/+32', 'spec.cidr: "2001:db8::/+32" has an invalid prefix length (0-128 for IPv6)'],
    ['2001:db8::/ 32', 'spec.cidr: "2001:db8::/ 32" has an invalid prefix length (0-128 for IPv6)'],
    ['2001:db8::/0x20', 'spec.cidr: "2001:db8::/0x20" has an invalid prefix length (0-128 for IPv6)'],
    ['2001:db8::/3.2e1', 'spec.cidr: "2001:db8::/3.2e1" has an invalid prefix length (0-128 for IPv6)'],
    ['x/8', 'spec.cidr: "x/8": "x" is not an IPv4 or IPv6 address'],
    ['010.0.0.0/8', 'spec.cidr: "010.0.0.0/8" has an octet with a leading zero (010), which some parsers read as octal; write 10'],
    ['fe80::%eth0/64', 'spec.cidr: "fe80::%eth0/64" has a zone index (%eth0); a scoped address is not accepted here'],
    ['2001:db8::/32', 'spec.exportV4[0].cidr: "2001:db8::/32" is not an IPv4 network', { family: 4 }],
    ['198.18.0.0/16', 'spec.exportV4[0].cidr: "198.18.0.0/16" is not an IPv6 network', { family: 6 }],
  ]
  for (const [text, message, opts] of cases) {
    const field = message.slice(0, message.indexOf(':'))
    t.equal(thrown(() => parseCidr(text, field, opts)).message, message, text)
  }
})

t.test('interface addresses keep their host bits', async (t) => {
  const a = parseIfAddr('192.0.2.10/24', 'spec.bgp.ipv4Address', { family: 4 })
  t.equal(formatAddr(a.addr.family, a.addr.value), '192.0.2.10')
  t.equal(formatCidr(a.cidr), '192.0.2.0/24')
  t.equal(formatCidr(parseIfAddr('2001:db8::5', 'x', { bare: true }).cidr), '2001:db8::5/128')
  t.equal(thrown(() => parseIfAddr('2001:db8::1/64', 'spec.bgp.ipv4Address', { family: 4 })).message, 'spec.bgp.ipv4Address: "2001:db8::1/64" is not an IPv4 address')
  t.equal(thrown(() => parseIfAddr('192.0.2.1/40', 'PINTO_IP')).message, 'PINTO_IP: "192.0.2.1/40" has an invalid prefix length (0-32 for IPv4)')
})

t.test('arithmetic: contains, cover, overlap, block of, nth, order, names', async (t) => {
  const c = (s: string) => parseCidr(s)
  const a = (s: string) => parseAddr(s)
  const inside = (cidr: string, addr: string): boolean => cidrContains(c(cidr), a(addr).family, a(addr).value)
  t.ok(inside('198.18.0.0/26', '198.18.0.63'))
  t.notOk(inside('198.18.0.64/26', '198.18.0.63'))
  t.ok(inside('0.0.0.0/0', '255.255.255.255'))
  t.notOk(inside('::/0', '192.0.2.1'), 'families never contain each other')
  t.ok(inside('2001:db8::/32', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'))
  t.ok(cidrCovers(c('198.18.0.0/15'), c('198.19.3.64/26')))
  t.notOk(cidrCovers(c('198.18.0.0/16'), c('198.19.0.0/26')))
  t.ok(cidrsOverlap(c('198.18.0.0/16'), c('198.18.255.255/32')))
  t.notOk(cidrsOverlap(c('198.18.0.0/16'), c('198.19.0.0/32')))
  t.notOk(cidrsOverlap(c('0.0.0.0/0'), c('::/0')))
  t.notOk(cidrsOverlap(c('2001:db8::/33'), c('2001:db8:8000::/33')))
  t.equal(formatCidr(maskCidr(4, a('198.18.3.77').value, 26)), '198.18.3.64/26', 'the /26 block of an address')
  t.equal(formatCidr(maskCidr(6, a('2001:db8::1:2').value, 122)), '2001:db8::1:0/122')
  t.equal(formatAddr(4, nthAddr(c('198.18.0.64/26'), 63)), '198.18.0.127')
  t.throws(() => nthAddr(c('198.18.0.64/26'), 64), RangeError)
  t.equal(addrOrdinal(c('198.18.0.64/26'), 4, a('198.18.0.70').value), 6n)
  t.equal(addrOrdinal(c('198.18.0.64/26'), 4, a('198.18.0.1').value), undefined)
  t.equal(formatAddr(6, cidrLast(c('2001:db8::/120'))), '2001:db8::ff')
  t.same(['2001:db8::1', '198.18.0.2', '198.18.0.10'].map(a).sort(compareAddr).map((x) => formatAddr(x.family, x.value)), ['198.18.0.2', '198.18.0.10', '2001:db8::1'])
  t.same(['198.18.0.0/26', '198.18.0.0/16', '::/0'].map(c).sort(compareCidr).map(formatCidr), ['198.18.0.0/16', '198.18.0.0/26', '::/0'])
  t.equal(cidrName(c('10.0.0.0/26')), '10-0-0-0-26')
  t.equal(cidrName(c('2001:db8::/122')), '2001-db8---122')
})

/** The outcome of a parse as comparable data: the value, or the error message. */
function outcome(fn: () => unknown): unknown {
  try {
    return fn()
  } catch (e) {
    return (e as Error).message
  }
}

t.test('readCidr and readAddr agree with parseCidr and parseAddr', async (t) => {
  const fixed = [
    '198.18.0.0/26', '0.0.0.0/0', '255.255.255.255/32', '198.18.0.1/26', '198.18.0.0/33', '198.18.0.0/026', '198.18.0.0/1e1',
    '198.18.0.0/+8', '198.018.0.0/16', '198.18.0.0', '2001:db8::/64', '2001:DB8::/64', '2001:db8:0::/64', '::/0', '::/128',
    '::ffff:192.0.2.0/120', '::ffff:c000:200/120', '2001:db8::1/64', 'fe80::%eth0/64', '/8', 'x/8', '', '1.2.3.4/8/8',
  ]
  const random: string[] = []
  let seed = 7
  const rnd = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2147483648) % n
  const alphabet = '0123456789abcdef.:/%'
  for (let i = 0; i < 3000; i++) random.push(Array.from({ length: 1 + rnd(20) }, () => alphabet[rnd(alphabet.length)]).join(''))
  for (let i = 0; i < 2000; i++) random.push(`${rnd(300)}.${rnd(300)}.${rnd(300)}.${rnd(300)}/${rnd(40)}`)
  let mismatches = 0
  for (const text of [...fixed, ...random]) {
    const want = outcome(() => parseCidr(text, 'f'))
    const got = outcome(() => readCidr(text, 'f'))
    if (JSON.stringify(want, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) !== JSON.stringify(got, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) {
      mismatches++
      if (mismatches < 5) t.fail(`${JSON.stringify(text)}: parseCidr ${String(want)} readCidr ${String(got)}`)
    }
    const addrText = text.split('/')[0] ?? ''
    if (outcome(() => formatAddr(parseAddr(addrText, 'f').family, parseAddr(addrText, 'f').value)) !== outcome(() => formatAddr(readAddr(addrText, 'f').family, readAddr(addrText, 'f').value))) mismatches++
  }
  t.equal(mismatches, 0, `${fixed.length + random.length} texts, parse and read agree`)
  // readIpv4Prefix takes exactly the canonical IPv4 networks, with parseCidr's values.
  let ipv4 = 0
  for (const text of [...fixed, ...random]) {
    const fast = readIpv4Prefix(text)
    const c = outcome(() => parseCidr(text, 'f')) as Cidr | string
    const canonical = typeof c !== 'string' && c.family === 4 && formatCidr(c) === text
    if (canonical) ipv4++
    if (canonical ? fast?.addr !== Number(c.base) || fast.len !== c.prefix : fast !== undefined) {
      if (mismatches++ < 5) t.fail(`${JSON.stringify(text)}: readIpv4Prefix ${JSON.stringify(fast)}, parseCidr ${typeof c === 'string' ? c : formatCidr(c)}`)
    }
  }
  t.ok(ipv4 > 100, `${ipv4} canonical IPv4 networks among them`)
  t.equal(mismatches, 0, 'readIpv4Prefix takes the canonical IPv4 networks only')
})

t.test('readIpv4Prefix: the length is digits only, no sign, space, hex, exponent or dot', async (t) => {
  // Each refused one has its host bits clear for the length it would read as, so only the length can refuse it.
  const cases: [string, { addr: number; len: number } | undefined][] = [
    ['198.0.0.0/8', { addr: 0xc6000000, len: 8 }],
    ['0.0.0.0/0', { addr: 0, len: 0 }],
    ['192.0.2.1/32', { addr: 0xc0000201, len: 32 }],
    ['198.0.0.0/+8', undefined],
    ['198.0.0.0/ 8', undefined],
    ['198.0.0.0/8 ', undefined],
    ['198.0.0.0/\t8', undefined],
    ['198.0.0.0/\n8', undefined],
    ['198.0.0.0/8.', undefined],
    ['198.0.0.0/08', undefined],
    ['0.0.0.0/-0', undefined],
    ['0.0.0.0/+0', undefined],
    ['0.0.0.0/ 0', undefined],
    ['0.0.0.0/0x', undefined],
    ['0.0.0.0/.0', undefined],
    ['0.0.0.0/0.', undefined],
    ['0.0.0.0/0e', undefined],
    ['0.0.0.0/', undefined],
    ['198.0.0.0/\u00a08', undefined],
    ['198.0.0.0/\u0668', undefined],
  ]
  for (const [text, want] of cases) {
    t.same(readIpv4Prefix(text), want, JSON.stringify(text))
    if (want === undefined) t.type(outcome(() => parseCidr(text, 'f')), 'string', `parseCidr refuses ${JSON.stringify(text)} too`)
  }
})
