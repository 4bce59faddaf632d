// Malformed multiprotocol attributes as whole UPDATEs, each attribute alone in its UPDATE: the ones a
// fault-injection run sent (a prefix longer than its family allows, a next hop cut short), per family.
// Annotated so each reads like RFC 4760 §3-4's diagrams.

import { updateBytes } from './codec/hex.js'

/** For IPv6 unicast: MP_UNREACH_NLRI with a /129, MP_REACH_NLRI with a next hop of 16 octets of which 8 are there. */
export const BAD_IPV6_MP: Readonly<Record<string, Buffer>> = {
  'MP_UNREACH_NLRI with a /129': updateBytes({
    attrs: `80 0f 15                              # optional, MP_UNREACH_NLRI, length 21
            0002 01                               # AFI 2, SAFI 1
            81 20010db8000000000000000000000000 00 # prefix length 129 and 17 octets`,
  }),
  'MP_REACH_NLRI whose next hop is cut short': updateBytes({
    attrs: `80 0e 0c                              # optional, MP_REACH_NLRI, length 12
            0002 01                               # AFI 2, SAFI 1
            10 20010db800000001                   # next hop length 16, only 8 octets follow`,
  }),
}

/** The same two for IPv4 unicast: a /33, and a next hop of 4 octets of which 2 are there. */
export const BAD_IPV4_MP: Readonly<Record<string, Buffer>> = {
  'MP_UNREACH_NLRI with a /33': updateBytes({
    attrs: `80 0f 09                              # optional, MP_UNREACH_NLRI, length 9
            0001 01                               # AFI 1, SAFI 1
            21 c6130100 00                        # prefix length 33 and 5 octets`,
  }),
  'MP_REACH_NLRI whose next hop is cut short': updateBytes({
    attrs: `80 0e 06                              # optional, MP_REACH_NLRI, length 6
            0001 01                               # AFI 1, SAFI 1
            04 c000                               # next hop length 4, only 2 octets follow`,
  }),
}
