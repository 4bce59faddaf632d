// Annotated byte fixtures for every message, capability and attribute the codec knows: each one
// decodes to the expected value and re-encodes to the same bytes (or to the stated bytes where
// the RFC says a speaker changes something on the way through).
import t from 'tap'
import { hex, MARKER } from './hex.js'
import { codecOptions, decodeMessage, encodeMessage, messageToJson, reconcileAs4, attributesToJson, IPV4_UNICAST, type CodecOptions } from '../../../bgp/index.js'

interface Fixture {
  name: string
  bytes: Buffer
  json: Record<string, unknown>
  opts?: CodecOptions
  /** Bytes the decoded message encodes to, when not the input itself. */
  reencoded?: Buffer
}

const as4 = codecOptions({ as4: true })
const as2 = codecOptions({ as4: false })
const addPath = codecOptions({ as4: true, addPath: new Set([IPV4_UNICAST]) })

const fixtures: Fixture[] = [
  {
    name: 'KEEPALIVE',
    bytes: hex`${MARKER} 0013 04`,
    json: { type: 'keepalive' },
  },
  {
    name: 'OPEN without optional parameters',
    bytes: hex`
      ${MARKER}
      001d        # length 29
      01          # OPEN
      04          # version 4
      fde9        # my AS 65001
      005a        # hold time 90
      c0000201    # BGP identifier 192.0.2.1
      00          # no optional parameters`,
    json: { type: 'open', version: 4, myAs: 65001, holdTime: 90, bgpId: '192.0.2.1', capabilities: [] },
  },
  {
    name: 'OPEN with every capability in one parameter (as BIRD sends them)',
    bytes: hex`
      ${MARKER}
      004a 01
      04 5ba0     # version 4, my AS = AS_TRANS (23456)
      005a        # hold time 90
      c0000201    # 192.0.2.1
      2d          # optional parameters length 45
      02 2b       # capabilities parameter, 43 bytes
      01 04 0001 00 01            # multiprotocol IPv4 unicast
      01 04 0002 00 01            # multiprotocol IPv6 unicast
      02 00                       # route refresh
      46 00                       # enhanced route refresh
      41 04 fa56ea01              # 4-octet AS 4200000001
      40 06 c078 0001 01 80       # graceful restart: R and N set, 120 s; IPv4 unicast, forwarding preserved
      45 04 0001 01 03            # add-path IPv4 unicast, send and receive
      06 00                       # extended message
      49 03 010203                # capability 73, unknown here: kept`,
    json: {
      type: 'open',
      version: 4,
      myAs: 23456,
      holdTime: 90,
      bgpId: '192.0.2.1',
      capabilities: [
        { name: 'multiprotocol', afi: 1, safi: 1 },
        { name: 'multiprotocol', afi: 2, safi: 1 },
        { name: 'route-refresh' },
        { name: 'enhanced-route-refresh' },
        { name: 'four-octet-as', asn: 4200000001 },
        { name: 'graceful-restart', restartState: true, notification: true, restartTime: 120, families: [{ afi: 1, safi: 1, forwardingPreserved: true }] },
        { name: 'add-path', families: [{ afi: 1, safi: 1, mode: 'both' }] },
        { name: 'extended-message' },
        { name: 'unknown(73)', code: 73, value: '010203' },
      ],
    },
  },
  {
    name: 'OPEN with one capability per parameter (as GoBGP sends them)',
    bytes: hex`
      ${MARKER}
      0031 01
      04 fde9 00b4 c0000202
      14                          # optional parameters length 20
      02 06 01 04 0001 00 01      # parameter: multiprotocol IPv4 unicast
      02 02 02 00                 # parameter: route refresh
      02 06 41 04 0000fde9        # parameter: 4-octet AS 65001`,
    json: {
      type: 'open',
      version: 4,
      myAs: 65001,
      holdTime: 180,
      bgpId: '192.0.2.2',
      capabilities: [{ name: 'multiprotocol', afi: 1, safi: 1 }, { name: 'route-refresh' }, { name: 'four-octet-as', asn: 65001 }],
    },
  },
  {
    name: 'OPEN with RFC 9072 extended optional parameters length',
    bytes: hex`
      ${MARKER}
      0029 01
      04 fde9 005a c0000201
      ff ff 0009                  # non-ext length 255, type 255, extended length 9
      02 0006 01 04 0001 00 01    # capabilities parameter with a two-octet length`,
    json: { type: 'open', version: 4, myAs: 65001, holdTime: 90, bgpId: '192.0.2.1', capabilities: [{ name: 'multiprotocol', afi: 1, safi: 1 }] },
  },
  {
    name: 'UPDATE with withdrawn routes, every RFC 4271/1997/4456 attribute, and NLRI',
    bytes: hex`
      ${MARKER}
      007e 02
      0005                        # withdrawn routes length 5
      18 c61200                   # 198.18.0.0/24
      00                          # 0.0.0.0/0
      0055                        # total path attribute length 85
      40 01 01 00                 # ORIGIN IGP
      40 02 0e 02 03 0000fde9 0000fdea 0000fdeb   # AS_PATH sequence 65001 65002 65003
      40 03 04 c0000201           # NEXT_HOP 192.0.2.1
      80 04 04 00000064           # MULTI_EXIT_DISC 100
      40 05 04 000000c8           # LOCAL_PREF 200
      40 06 00                    # ATOMIC_AGGREGATE
      c0 07 08 0000fde9 c0000201  # AGGREGATOR 65001 192.0.2.1
      c0 08 08 fde90064 ffffff01  # COMMUNITIES 65001:100 NO_EXPORT
      80 09 04 c0000202           # ORIGINATOR_ID 192.0.2.2
      80 0a 08 c0000203 c0000204  # CLUSTER_LIST 192.0.2.3 192.0.2.4
      1a c6120040                 # 198.18.0.64/26
      20 c6120101                 # 198.18.1.1/32
      10 c613                     # 198.19.0.0/16`,
    json: {
      type: 'update',
      withdrawn: ['198.18.0.0/24', '0.0.0.0/0'],
      attributes: {
        origin: 'igp',
        asPath: [{ type: 'sequence', asns: [65001, 65002, 65003] }],
        nextHop: '192.0.2.1',
        med: 100,
        localPref: 200,
        atomicAggregate: true,
        aggregator: { asn: 65001, address: '192.0.2.1' },
        communities: ['65001:100', '65535:65281'],
        originatorId: '192.0.2.2',
        clusterList: ['192.0.2.3', '192.0.2.4'],
      },
      nlri: ['198.18.0.64/26', '198.18.1.1/32', '198.19.0.0/16'],
    },
  },
  {
    name: 'UPDATE with AS_SET and confederation segments',
    bytes: hex`
      ${MARKER}
      0043 02
      0000 0028
      40 01 01 02                 # ORIGIN INCOMPLETE
      40 02 1a                    # AS_PATH, 26 bytes:
        03 01 0000fdf2            #   confed sequence 65010
        02 02 0000fde9 0000fdea   #   sequence 65001 65002
        01 02 0000fdeb 0000fdec   #   set {65003 65004}
      40 03 04 c0000201
      18 c61202                   # 198.18.2.0/24`,
    json: {
      type: 'update',
      attributes: {
        origin: 'incomplete',
        asPath: [
          { type: 'confed-sequence', asns: [65010] },
          { type: 'sequence', asns: [65001, 65002] },
          { type: 'set', asns: [65003, 65004] },
        ],
        nextHop: '192.0.2.1',
      },
      nlri: ['198.18.2.0/24'],
    },
  },
  {
    name: 'UPDATE from a 2-octet AS speaker with AS4_PATH and AS4_AGGREGATOR',
    opts: as2,
    bytes: hex`
      ${MARKER}
      0056 02
      0000 003b
      40 01 01 00
      40 02 08 02 03 fde9 5ba0 fdeb     # AS_PATH 65001 AS_TRANS 65003 (2-octet)
      40 03 04 c0000201
      c0 07 06 5ba0 c0000201            # AGGREGATOR AS_TRANS 192.0.2.1
      c0 11 0e 02 03 0000fde9 fa56ea01 0000fdeb   # AS4_PATH 65001 4200000001 65003
      c0 12 08 fa56ea01 c0000201        # AS4_AGGREGATOR 4200000001 192.0.2.1
      18 c61203`,
    json: {
      type: 'update',
      attributes: {
        origin: 'igp',
        asPath: [{ type: 'sequence', asns: [65001, 23456, 65003] }],
        nextHop: '192.0.2.1',
        aggregator: { asn: 23456, address: '192.0.2.1' },
        as4Path: [{ type: 'sequence', asns: [65001, 4200000001, 65003] }],
        as4Aggregator: { asn: 4200000001, address: '192.0.2.1' },
      },
      nlri: ['198.18.3.0/24'],
    },
  },
  {
    name: 'UPDATE with extended and large communities and unknown attributes',
    bytes: hex`
      ${MARKER}
      0054 02
      0000 0039
      40 01 01 00
      40 02 00                          # empty AS_PATH (iBGP origination)
      40 03 04 c0000201
      c0 10 10 0002fde900000064 0102c0000201000a   # EXTENDED_COMMUNITIES rt:65001:100 rt:192.0.2.1:10
      c0 20 0c fa56ea01 00000001 00000002          # LARGE_COMMUNITY 4200000001:1:2
      c0 63 02 abcd                     # attribute 99, optional transitive, unknown: kept, Partial set
      80 64 01 ee                       # attribute 100, optional non-transitive, unknown: dropped
      18 c61204`,
    reencoded: hex`
      ${MARKER}
      0050 02
      0000 0035
      40 01 01 00
      40 02 00
      40 03 04 c0000201
      c0 10 10 0002fde900000064 0102c0000201000a
      c0 20 0c fa56ea01 00000001 00000002
      e0 63 02 abcd                     # now with the Partial bit
      18 c61204`,
    json: {
      type: 'update',
      attributes: {
        origin: 'igp',
        asPath: [],
        nextHop: '192.0.2.1',
        extCommunities: ['rt:65001:100', 'rt:192.0.2.1:10'],
        largeCommunities: ['4200000001:1:2'],
        unknown: [{ code: 99, flags: 0xe0, value: 'abcd' }],
      },
      nlri: ['198.18.4.0/24'],
    },
  },
  {
    name: 'UPDATE with MP_REACH_NLRI for IPv6: global and link-local next hop',
    bytes: hex`
      ${MARKER}
      005d 02
      0000 0046
      90 0e 0035                        # MP_REACH_NLRI, extended length 53
        0002 01                         #   IPv6 unicast
        20                              #   next hop length 32
        20010db8000000000000000000000001  #   2001:db8::1
        fe800000000000000000000000000001  #   fe80::1
        00                              #   reserved
        30 20010db80001                 #   2001:db8:1::/48
        40 20010db800020000             #   2001:db8:2::/64
      40 01 01 00
      40 02 06 02 01 0000fde9`,
    json: {
      type: 'update',
      attributes: { origin: 'igp', asPath: [{ type: 'sequence', asns: [65001] }] },
      mpReach: { afi: 2, safi: 1, nextHop: ['2001:db8::1', 'fe80::1'], nlri: ['2001:db8:1::/48', '2001:db8:2::/64'] },
    },
  },
  {
    name: 'UPDATE with MP_UNREACH_NLRI for IPv6',
    bytes: hex`
      ${MARKER}
      0025 02
      0000 000e
      90 0f 000a 0002 01 30 20010db80001    # withdraw 2001:db8:1::/48`,
    json: { type: 'update', mpUnreach: { afi: 2, safi: 1, withdrawn: ['2001:db8:1::/48'] } },
  },
  {
    name: 'UPDATE with add-path identifiers (RFC 7911)',
    opts: addPath,
    bytes: hex`
      ${MARKER}
      003d 02
      0008 00000001 18 c61200           # withdraw path 1 of 198.18.0.0/24
      000e
      40 01 01 00
      40 02 00
      40 03 04 c0000201
      00000001 18 c61205                # path 1 of 198.18.5.0/24
      00000002 18 c61205                # path 2 of 198.18.5.0/24`,
    json: {
      type: 'update',
      withdrawn: [{ prefix: '198.18.0.0/24', pathId: 1 }],
      attributes: { origin: 'igp', asPath: [], nextHop: '192.0.2.1' },
      nlri: [
        { prefix: '198.18.5.0/24', pathId: 1 },
        { prefix: '198.18.5.0/24', pathId: 2 },
      ],
    },
  },
  {
    name: 'End-of-RIB for IPv4 unicast',
    bytes: hex`${MARKER} 0017 02 0000 0000`,
    json: { type: 'update', endOfRib: { afi: 1, safi: 1 } },
  },
  {
    name: 'End-of-RIB for IPv6 unicast',
    bytes: hex`${MARKER} 001e 02 0000 0007 900f 0003 0002 01`,
    json: { type: 'update', endOfRib: { afi: 2, safi: 1 } },
  },
  {
    name: 'NOTIFICATION Hold Timer Expired',
    bytes: hex`${MARKER} 0015 03 04 00`,
    json: { type: 'notification', code: 4, subcode: 0, text: 'Hold Timer Expired' },
  },
  {
    name: 'NOTIFICATION Bad Peer AS with the AS as data',
    bytes: hex`${MARKER} 0017 03 02 02 fde9`,
    json: { type: 'notification', code: 2, subcode: 2, text: 'OPEN Message Error / Bad Peer AS', data: 'fde9' },
  },
  {
    name: 'NOTIFICATION Administrative Shutdown with an RFC 9003 communication',
    bytes: hex`${MARKER} 0019 03 06 02 03 627965   # length 3, "bye"`,
    json: { type: 'notification', code: 6, subcode: 2, text: 'Cease / Administrative Shutdown', data: '03627965', shutdownMessage: 'bye' },
  },
  {
    name: 'NOTIFICATION FSM error in OpenConfirm (RFC 6608)',
    bytes: hex`${MARKER} 0015 03 05 02`,
    json: { type: 'notification', code: 5, subcode: 2, text: 'Finite State Machine Error / Receive Unexpected Message in OpenConfirm State' },
  },
  {
    name: 'ROUTE-REFRESH for IPv4 unicast',
    bytes: hex`${MARKER} 0017 05 0001 00 01`,
    json: { type: 'route-refresh', afi: 1, safi: 1, subtype: 'normal' },
  },
  {
    name: 'ROUTE-REFRESH BoRR for IPv6 unicast (RFC 7313)',
    bytes: hex`${MARKER} 0017 05 0002 01 01`,
    json: { type: 'route-refresh', afi: 2, safi: 1, subtype: 'borr' },
  },
  {
    name: 'ROUTE-REFRESH EoRR for IPv4 unicast',
    bytes: hex`${MARKER} 0017 05 0001 02 01`,
    json: { type: 'route-refresh', afi: 1, safi: 1, subtype: 'eorr' },
  },
]

for (const f of fixtures) {
  t.test(f.name, async (t) => {
    const opts = f.opts ?? as4
    const msg = decodeMessage(f.bytes, opts)
    t.same(messageToJson(msg), f.json, 'decodes to the expected value')
    const again = encodeMessage(msg, opts)
    t.equal(again.toString('hex'), (f.reencoded ?? f.bytes).toString('hex'), 're-encodes to the expected bytes')
    t.same(messageToJson(decodeMessage(again, opts)), f.json, 'the re-encoded bytes decode to the same value')
  })
}

t.test('RFC 6793 §4.2.3: AS4_PATH and AS4_AGGREGATOR rebuild the real path', async (t) => {
  const f = fixtures.find((x) => x.name.includes('2-octet'))!
  const msg = decodeMessage(f.bytes, as2)
  if (msg.type !== 'update') throw new Error('not an update')
  t.same(attributesToJson(reconcileAs4(msg.attributes)), {
    origin: 'igp',
    asPath: [{ type: 'sequence', asns: [65001, 4200000001, 65003] }],
    nextHop: '192.0.2.1',
    aggregator: { asn: 4200000001, address: '192.0.2.1' },
  })
})
