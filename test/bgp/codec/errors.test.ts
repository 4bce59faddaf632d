// Every RFC 4271 §6 and RFC 7606 case the codec can see: the exact NOTIFICATION code/subcode,
// the data where the RFC names it, and the RFC 7606 action (thrown for a session reset, carried
// on the UPDATE otherwise).
import t from 'tap'
import { hex, MARKER, updateBytes as update } from './hex.js'
import { BgpError, codecOptions, decodeMessage, encodeMessage, messageToJson, actionName, notification, type CodecOptions } from '../../../bgp/index.js'

const as4 = codecOptions({ as4: true })
const as2 = codecOptions({ as4: false })

const MANDATORY = '40 01 01 00  40 02 00  40 03 04 c0000201'
const NLRI = '18 c61200'

interface Case {
  name: string
  bytes: Buffer
  opts?: CodecOptions
  code: number
  subcode: number
  action: 'session-reset' | 'afi-safi-disable' | 'treat-as-withdraw' | 'attribute-discard'
  data?: string
  offset?: number
}

const cases: Case[] = [
  // RFC 4271 §6.1 message header errors
  { name: 'marker not all ones', bytes: hex`fffffffffffffffffffffffffffffffe 0013 04`, code: 1, subcode: 1, action: 'session-reset', offset: 15 },
  { name: 'length below 19', bytes: hex`${MARKER} 0012 04 00`, code: 1, subcode: 2, action: 'session-reset', data: '0012', offset: 16 },
  { name: 'UPDATE longer than 4096 without extended message', bytes: hex`${MARKER} 1001 02 ${'00'.repeat(4097 - 19)}`, code: 1, subcode: 2, action: 'session-reset', data: '1001' },
  { name: 'OPEN longer than 4096 even with extended message', bytes: hex`${MARKER} 1001 01 ${'00'.repeat(4097 - 19)}`, opts: codecOptions({ extendedMessage: true }), code: 1, subcode: 2, action: 'session-reset', data: '1001' },
  { name: 'unknown message type', bytes: hex`${MARKER} 0013 06`, code: 1, subcode: 3, action: 'session-reset', data: '06', offset: 18 },
  { name: 'OPEN shorter than 29', bytes: hex`${MARKER} 001c 01 04 fde9 005a c0000201`, code: 1, subcode: 2, action: 'session-reset', data: '001c' },
  { name: 'KEEPALIVE longer than 19', bytes: hex`${MARKER} 0014 04 00`, code: 1, subcode: 2, action: 'session-reset', data: '0014' },
  { name: 'NOTIFICATION shorter than 21', bytes: hex`${MARKER} 0014 03 06`, code: 1, subcode: 2, action: 'session-reset', data: '0014' },
  { name: 'UPDATE shorter than 23', bytes: hex`${MARKER} 0016 02 0000 00`, code: 1, subcode: 2, action: 'session-reset', data: '0016' },
  { name: 'ROUTE-REFRESH shorter than 23', bytes: hex`${MARKER} 0016 05 0001 00`, code: 1, subcode: 2, action: 'session-reset', data: '0016' },

  // RFC 4271 §6.2 OPEN errors
  { name: 'OPEN version 3', bytes: hex`${MARKER} 001d 01 03 fde9 005a c0000201 00`, code: 2, subcode: 1, action: 'session-reset', data: '0004' },
  { name: 'OPEN hold time 1', bytes: hex`${MARKER} 001d 01 04 fde9 0001 c0000201 00`, code: 2, subcode: 6, action: 'session-reset', offset: 22 },
  { name: 'OPEN hold time 2', bytes: hex`${MARKER} 001d 01 04 fde9 0002 c0000201 00`, code: 2, subcode: 6, action: 'session-reset' },
  { name: 'OPEN BGP identifier 0.0.0.0', bytes: hex`${MARKER} 001d 01 04 fde9 005a 00000000 00`, code: 2, subcode: 3, action: 'session-reset', offset: 24 },
  { name: 'OPEN with an authentication parameter (type 1)', bytes: hex`${MARKER} 0020 01 04 fde9 005a c0000201 03 01 01 00`, code: 2, subcode: 4, action: 'session-reset', offset: 29 },
  { name: 'OPEN optional parameters length disagrees with the message', bytes: hex`${MARKER} 001f 01 04 fde9 005a c0000201 05 02 00`, code: 2, subcode: 0, action: 'session-reset', offset: 28 },
  { name: 'OPEN capability overruns its parameter', bytes: hex`${MARKER} 0021 01 04 fde9 005a c0000201 04 02 02 41 04`, code: 2, subcode: 0, action: 'session-reset' },
  { name: 'OPEN multiprotocol capability of length 3', bytes: hex`${MARKER} 0022 01 04 fde9 005a c0000201 05 02 03 01 03 0001 00`, code: 2, subcode: 0, action: 'session-reset' },
  { name: 'OPEN add-path Send/Receive 4', bytes: hex`${MARKER} 0023 01 04 fde9 005a c0000201 06 02 04 45 04 0001 01 04`, code: 2, subcode: 0, action: 'session-reset' },

  // RFC 4271 §6.3 with RFC 7606: lengths that leave the fields unlocatable reset the session
  { name: 'withdrawn routes length overruns the message', bytes: hex`${MARKER} 0017 02 0005 0000`, code: 3, subcode: 1, action: 'session-reset' },
  { name: 'total path attribute length overruns the message', bytes: hex`${MARKER} 0017 02 0000 0005`, code: 3, subcode: 1, action: 'session-reset' },
  { name: 'NLRI prefix length 33', bytes: update({ attrs: MANDATORY, nlri: '21 c6120000 00' }), code: 3, subcode: 10, action: 'session-reset' },
  { name: 'NLRI prefix overruns the message', bytes: update({ attrs: MANDATORY, nlri: '18 c612' }), code: 3, subcode: 10, action: 'session-reset' },
  { name: 'withdrawn prefix length 40', bytes: update({ withdrawn: '28 c612000000' }), code: 3, subcode: 10, action: 'session-reset' },
  { name: 'unrecognized well-known attribute', bytes: update({ attrs: `${MANDATORY} 40 63 01 00`, nlri: NLRI }), code: 3, subcode: 2, action: 'session-reset', data: '40630100' },
  { name: 'MP_REACH_NLRI twice', bytes: update({ attrs: '90 0e 0005 0002 01 00 00  90 0e 0005 0002 01 00 00' }), code: 3, subcode: 1, action: 'session-reset' },
  { name: 'MP_REACH_NLRI too short to hold AFI/SAFI', bytes: update({ attrs: '80 0e 02 0002' }), code: 3, subcode: 9, action: 'session-reset' },
  { name: 'MP_REACH_NLRI with transitive flags', bytes: update({ attrs: 'c0 0e 05 0002 01 00 00' }), code: 3, subcode: 4, action: 'session-reset' },

  // RFC 7606 §7.11 and §5.3: MP attributes with a known family lose only that family
  { name: 'MP_REACH_NLRI IPv6 next hop of 5 bytes', bytes: update({ attrs: `40 01 01 00 40 02 00 80 0e 0b 0002 01 05 2001db8000 00 00` }), code: 3, subcode: 9, action: 'afi-safi-disable' },
  { name: 'MP_REACH_NLRI IPv6 prefix length 129', bytes: update({ attrs: `40 01 01 00 40 02 00 80 0e 16 0002 01 10 20010db8000000000000000000000001 00 81` }), code: 3, subcode: 10, action: 'afi-safi-disable' },
  { name: 'MP_UNREACH_NLRI IPv6 prefix overrun', bytes: update({ attrs: `80 0f 05 0002 01 40 20` }), code: 3, subcode: 10, action: 'afi-safi-disable' },

  // RFC 7606 §7: per attribute
  { name: 'ORIGIN value 3', bytes: update({ attrs: '40 01 01 03  40 02 00  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 6, action: 'treat-as-withdraw', data: '40010103' },
  { name: 'ORIGIN length 2', bytes: update({ attrs: '40 01 02 0000  40 02 00  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'AS_PATH unknown segment type', bytes: update({ attrs: '40 01 01 00  40 02 06 05 01 0000fde9  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 11, action: 'treat-as-withdraw' },
  { name: 'AS_PATH segment of length zero', bytes: update({ attrs: '40 01 01 00  40 02 02 02 00  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 11, action: 'treat-as-withdraw' },
  { name: 'AS_PATH segment overrun', bytes: update({ attrs: '40 01 01 00  40 02 06 02 02 0000fde9  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 11, action: 'treat-as-withdraw' },
  { name: 'AS_PATH one octet left after a segment', bytes: update({ attrs: '40 01 01 00  40 02 07 02 01 0000fde9 02  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 11, action: 'treat-as-withdraw' },
  { name: 'NEXT_HOP length 5', bytes: update({ attrs: '40 01 01 00  40 02 00  40 03 05 c000020100', nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'MULTI_EXIT_DISC length 3', bytes: update({ attrs: `${MANDATORY} 80 04 03 000001`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'LOCAL_PREF length 2', bytes: update({ attrs: `${MANDATORY} 40 05 02 0064`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'ATOMIC_AGGREGATE length 1', bytes: update({ attrs: `${MANDATORY} 40 06 01 00`, nlri: NLRI }), code: 3, subcode: 5, action: 'attribute-discard' },
  { name: 'AGGREGATOR length 7', bytes: update({ attrs: `${MANDATORY} c0 07 07 0000fde9 c00002`, nlri: NLRI }), code: 3, subcode: 5, action: 'attribute-discard' },
  { name: 'AGGREGATOR of 8 bytes from a 2-octet speaker', opts: as2, bytes: update({ attrs: `${MANDATORY} c0 07 08 0000fde9 c0000201`, nlri: NLRI }), code: 3, subcode: 5, action: 'attribute-discard' },
  { name: 'COMMUNITIES length 5', bytes: update({ attrs: `${MANDATORY} c0 08 05 fde9006400`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'COMMUNITIES length 0', bytes: update({ attrs: `${MANDATORY} c0 08 00`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'ORIGINATOR_ID length 5', bytes: update({ attrs: `${MANDATORY} 80 09 05 c000020200`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'CLUSTER_LIST length 6', bytes: update({ attrs: `${MANDATORY} 80 0a 06 c0000203 0000`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'EXTENDED_COMMUNITIES length 9', bytes: update({ attrs: `${MANDATORY} c0 10 09 0002fde90000006400`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'LARGE_COMMUNITY length 13', bytes: update({ attrs: `${MANDATORY} c0 20 0d fa56ea01 00000001 00000002 00`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: 'AS4_PATH malformed from a 2-octet speaker', opts: as2, bytes: update({ attrs: `${MANDATORY} c0 11 06 02 02 fa56ea01`, nlri: NLRI }), code: 3, subcode: 11, action: 'attribute-discard' },
  { name: 'AS4_PATH with a confederation segment', opts: as2, bytes: update({ attrs: `${MANDATORY} c0 11 06 03 01 fa56ea01`, nlri: NLRI }), code: 3, subcode: 11, action: 'attribute-discard' },
  { name: 'AS4_AGGREGATOR length 6', opts: as2, bytes: update({ attrs: `${MANDATORY} c0 12 06 fde9 c0000201`, nlri: NLRI }), code: 3, subcode: 5, action: 'attribute-discard' },

  // RFC 7606 §3
  { name: '§3(c) ORIGIN marked optional', bytes: update({ attrs: '80 01 01 00  40 02 00  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 4, action: 'treat-as-withdraw', data: '80010100' },
  { name: '§3(c) AGGREGATOR marked well-known: discarded as the attribute says', bytes: update({ attrs: `${MANDATORY} 40 07 08 0000fde9 c0000201`, nlri: NLRI }), code: 3, subcode: 4, action: 'attribute-discard' },
  { name: '§3(d) ORIGIN missing while NLRI present', bytes: update({ attrs: '40 02 00  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 3, action: 'treat-as-withdraw', data: '01' },
  { name: '§3(d) AS_PATH missing while MP_REACH present', bytes: update({ attrs: '40 01 01 00 80 0e 1c 0002 01 10 20010db8000000000000000000000001 00 30 20010db80001' }), code: 3, subcode: 3, action: 'treat-as-withdraw', data: '02' },
  { name: '§3(d) NEXT_HOP missing while IPv4 NLRI present', bytes: update({ attrs: '40 01 01 00  40 02 00', nlri: NLRI }), code: 3, subcode: 3, action: 'treat-as-withdraw', data: '03' },
  { name: '§3(g) a repeated ORIGIN is discarded, the first kept', bytes: update({ attrs: `${MANDATORY} 40 01 01 02`, nlri: NLRI }), code: 3, subcode: 1, action: 'attribute-discard' },
  { name: '§3(h) the strongest action wins: discard then withdraw', bytes: update({ attrs: `${MANDATORY} 40 06 01 00 c0 08 05 fde9006400`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: '§4 an attribute overruns the attribute list', bytes: update({ attrs: `${MANDATORY} c0 08 08 fde90064`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw' },
  { name: '§4 too few octets left for an attribute header', bytes: update({ attrs: `${MANDATORY} c0 08`, nlri: NLRI }), code: 3, subcode: 1, action: 'treat-as-withdraw' },

  // RFC 4271 §6.3: the data of each UPDATE Message Error, byte for byte. The erroneous attribute is its
  // flags and type code, its length (one or two octets, as sent) and its value; 3/1 and 3/10 carry none.
  { name: '§6.3 3/1 data: none for a repeated MP_UNREACH_NLRI', bytes: update({ attrs: '80 0f 03 0002 01  80 0f 03 0002 01' }), code: 3, subcode: 1, action: 'session-reset', data: '' },
  { name: '§6.3 3/2 data: the unrecognized well-known attribute, extended length kept', bytes: update({ attrs: `${MANDATORY} 50 63 0002 abcd`, nlri: NLRI }), code: 3, subcode: 2, action: 'session-reset', data: '50630002abcd' },
  { name: '§6.3 3/3 data: the missing attribute\'s type code', bytes: update({ attrs: '40 01 01 00  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 3, action: 'treat-as-withdraw', data: '02' },
  { name: '§6.3 3/4 data: MP_REACH_NLRI with transitive flags', bytes: update({ attrs: 'c0 0e 05 0002 01 00 00' }), code: 3, subcode: 4, action: 'session-reset', data: 'c00e050002010000' },
  { name: '§6.3 3/4 data: ORIGIN marked optional, with an extended length', bytes: update({ attrs: 'd0 01 0001 00  40 02 00  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 4, action: 'treat-as-withdraw', data: 'd001000100' },
  { name: '§6.3 3/5 data: NEXT_HOP of 5 octets', bytes: update({ attrs: '40 01 01 00  40 02 00  40 03 05 c000020100', nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw', data: '400305c000020100' },
  { name: '§6.3 3/5 data: LOCAL_PREF of 2 octets', bytes: update({ attrs: `${MANDATORY} 40 05 02 0064`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw', data: '4005020064' },
  { name: '§6.3 3/5 data: an attribute overrunning the list, as far as it goes', bytes: update({ attrs: `${MANDATORY} c0 08 08 fde90064`, nlri: NLRI }), code: 3, subcode: 5, action: 'treat-as-withdraw', data: 'c00808fde90064' },
  { name: '§6.3 3/6 data: ORIGIN value 2 beyond the last', bytes: update({ attrs: '40 01 01 05  40 02 00  40 03 04 c0000201', nlri: NLRI }), code: 3, subcode: 6, action: 'treat-as-withdraw', data: '40010105' },
  { name: '§6.3 3/9 data: MP_REACH_NLRI too short to hold AFI/SAFI', bytes: update({ attrs: '80 0e 02 0002' }), code: 3, subcode: 9, action: 'session-reset', data: '800e020002' },
  { name: '§6.3 3/9 data: MP_UNREACH_NLRI of 2 octets, extended length', bytes: update({ attrs: '90 0f 0002 0002' }), code: 3, subcode: 9, action: 'session-reset', data: '900f00020002' },
  { name: '§6.3 3/9 data: MP_REACH_NLRI next hop length 16 with 8 octets there', bytes: update({ attrs: '80 0e 0c 0002 01 10 20010db800000001' }), code: 3, subcode: 9, action: 'afi-safi-disable', data: '800e0c0002011020010db800000001' },
  { name: '§6.3 3/9 data: MP_REACH_NLRI IPv6 next hop of 5 octets', bytes: update({ attrs: `40 01 01 00 40 02 00 80 0e 0b 0002 01 05 2001db8000 00 00` }), code: 3, subcode: 9, action: 'afi-safi-disable', data: '800e0b000201052001db80000000' },
  { name: '§6.3 3/10 data: none for MP_UNREACH_NLRI IPv6 prefix length 129', bytes: update({ attrs: '80 0f 15 0002 01 81 20010db8000000000000000000000000 00' }), code: 3, subcode: 10, action: 'afi-safi-disable', data: '' },
  { name: '§6.3 3/10 data: none for NLRI prefix length 33', bytes: update({ attrs: MANDATORY, nlri: '21 c6120000 00' }), code: 3, subcode: 10, action: 'session-reset', data: '' },

  // RFC 7313 §5
  { name: 'ROUTE-REFRESH of 24 bytes', bytes: hex`${MARKER} 0018 05 0001 01 01 00`, code: 7, subcode: 1, action: 'session-reset' },
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    let err: BgpError | undefined
    try {
      const msg = decodeMessage(c.bytes, c.opts ?? as4)
      if (msg.type === 'update') err = msg.error
      if (err === undefined) t.fail(`decoded without an error: ${JSON.stringify(messageToJson(msg))}`)
    } catch (e) {
      if (!(e instanceof BgpError)) throw e
      err = e
      t.equal(actionName(e.action), 'session-reset', 'only session resets are thrown')
    }
    if (err === undefined) return
    t.equal(err.code, c.code, 'code')
    t.equal(err.subcode, c.subcode, 'subcode')
    t.equal(err.actionName, c.action, 'action')
    if (c.data !== undefined) t.equal(Buffer.from(err.data).toString('hex'), c.data, 'data')
    if (c.offset !== undefined) t.equal(err.offset, c.offset, 'offset')
  })
}

t.test('the NOTIFICATION for a 3/9 session reset carries the MP attribute byte for byte', async (t) => {
  let err: BgpError | undefined
  try {
    decodeMessage(update({ attrs: '80 0e 02 0002' }), as4)
  } catch (e) {
    if (e instanceof BgpError) err = e
  }
  if (err === undefined) return t.fail('no session reset')
  // What the session sends on a session-reset error: code, subcode, the error's data (bgp/session/fsm.ts).
  const bytes = encodeMessage(notification(err.code, err.subcode, { data: err.data }), as4)
  t.equal(Buffer.from(bytes).toString('hex'), `${MARKER}001a030309800e020002`)
})

t.test('an MP attribute\'s prefix error names the attribute and its family', async (t) => {
  const msg = decodeMessage(update({ attrs: '80 0f 15 0002 01 81 20010db8000000000000000000000000 00' }), as4)
  if (msg.type !== 'update') throw new Error('not an update')
  t.equal(msg.familyErrors?.length, 1)
  t.equal(msg.familyErrors?.[0]?.attrCode, 15)
  t.equal(msg.familyErrors?.[0]?.family, (2 << 8) | 1)
  t.match(msg.familyErrors?.[0]?.message, /MP_UNREACH_NLRI: prefix length 129 exceeds 128/)
  t.equal(msg.routesError, undefined, 'nothing else in the UPDATE is wrong')
})

t.test('a family error does not hide a treat-as-withdraw for the rest of the UPDATE', async (t) => {
  // ORIGIN 3 (treat-as-withdraw) beside a malformed IPv6 MP_UNREACH_NLRI (AFI/SAFI disable, stronger).
  const msg = decodeMessage(update({ attrs: '40 01 01 03  40 02 00  40 03 04 c0000201  80 0f 05 0002 01 40 20', nlri: NLRI }), as4)
  if (msg.type !== 'update') throw new Error('not an update')
  t.equal(msg.error?.actionName, 'afi-safi-disable', 'the strongest for reports')
  t.equal(msg.familyErrors?.[0]?.family, (2 << 8) | 1)
  t.equal(msg.routesError?.actionName, 'treat-as-withdraw', 'the IPv4 NLRI are still withdrawn')
  t.equal(msg.routesError?.subcode, 6)
})

t.test('treat-as-withdraw still yields the prefixes to withdraw', async (t) => {
  const msg = decodeMessage(update({ attrs: '40 01 01 03  40 02 00  40 03 04 c0000201', nlri: '18 c61200 18 c61201' }), as4)
  t.equal(msg.type, 'update')
  if (msg.type !== 'update') return
  t.same(messageToJson(msg).nlri, ['198.18.0.0/24', '198.18.1.0/24'])
})

t.test('§4: after an overrun the NLRI are still found from the total attribute length', async (t) => {
  const msg = decodeMessage(update({ attrs: `${MANDATORY} c0 08 08 fde90064`, nlri: '18 c61207' }), as4)
  if (msg.type !== 'update') throw new Error('not an update')
  t.same(messageToJson(msg).nlri, ['198.18.7.0/24'])
  t.equal(msg.attributes.origin, 0, 'attributes before the overrun are kept')
})

t.test('a discarded attribute leaves the rest of the route usable', async (t) => {
  const msg = decodeMessage(update({ attrs: `${MANDATORY} c0 07 07 0000fde9 c00002 c0 08 04 fde90064`, nlri: NLRI }), as4)
  if (msg.type !== 'update') throw new Error('not an update')
  t.equal(msg.error?.actionName, 'attribute-discard')
  t.equal(msg.attributes.aggregator, undefined)
  t.same(msg.attributes.communities, [0xfde90064])
})

t.test('an AFI/SAFI disable names the family and keeps the IPv4 NLRI', async (t) => {
  const msg = decodeMessage(update({ attrs: `${MANDATORY} 80 0f 05 0002 01 40 20`, nlri: NLRI }), as4)
  if (msg.type !== 'update') throw new Error('not an update')
  t.equal(msg.error?.family, (2 << 8) | 1)
  t.same(messageToJson(msg).nlri, ['198.18.0.0/24'])
})

t.test('AS4_PATH and AS4_AGGREGATOR between 4-octet speakers are ignored silently', async (t) => {
  const msg = decodeMessage(update({ attrs: `${MANDATORY} c0 11 06 02 01 fa56ea01 c0 12 08 fa56ea01 c0000201`, nlri: NLRI }), as4)
  if (msg.type !== 'update') throw new Error('not an update')
  t.equal(msg.error, undefined)
  t.equal(msg.attributes.as4Path, undefined)
  t.equal(msg.attributes.as4Aggregator, undefined)
})

t.test('a NOTIFICATION whose shutdown communication is not valid UTF-8 keeps only its data', async (t) => {
  const msg = decodeMessage(hex`${MARKER} 0018 03 06 02 02 c328`, as4)
  t.same(messageToJson(msg), { type: 'notification', code: 6, subcode: 2, text: 'Cease / Administrative Shutdown', data: '02c328' })
})
