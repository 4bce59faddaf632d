// Wire constants of BGP-4 and its extensions, named as the RFCs and IANA registries name them.
// Numbers only: no behaviour lives here.

export const MARKER_LENGTH = 16
export const HEADER_LENGTH = 19
/** RFC 4271 §4.1: the largest message without the extended message capability. */
export const MAX_MESSAGE_LENGTH = 4096
/** RFC 8654: the largest message once extended message is negotiated (never for OPEN or KEEPALIVE). */
export const MAX_EXTENDED_MESSAGE_LENGTH = 65535
export const BGP_VERSION = 4
/** RFC 6793 §9: the 2-octet stand-in for a 4-octet AS number. */
export const AS_TRANS = 23456

export const MessageType = {
  OPEN: 1,
  UPDATE: 2,
  NOTIFICATION: 3,
  KEEPALIVE: 4,
  ROUTE_REFRESH: 5,
} as const

/** RFC 4271 §6.1 minimum lengths per type; KEEPALIVE is exactly 19. */
export const MIN_MESSAGE_LENGTH: Readonly<Record<number, number>> = {
  [MessageType.OPEN]: 29,
  [MessageType.UPDATE]: 23,
  [MessageType.NOTIFICATION]: 21,
  [MessageType.KEEPALIVE]: 19,
  [MessageType.ROUTE_REFRESH]: 23,
}

export const Afi = { IPV4: 1, IPV6: 2 } as const
export const Safi = { UNICAST: 1 } as const
export type AfiNumber = 1 | 2

/** An AFI/SAFI pair (RFC 4760 §5), what BGP negotiates and the wire calls a family: IPv4 unicast is 1/1. */
export interface AfiSafi {
  readonly afi: number
  readonly safi: number
}

/** An AFI/SAFI pair as one small integer, `afi << 8 | safi`, for sets and map keys. */
export function familyKey(afi: number, safi: number): number {
  return (afi << 8) | safi
}
export const IPV4_UNICAST = familyKey(Afi.IPV4, Safi.UNICAST)
export const IPV6_UNICAST = familyKey(Afi.IPV6, Safi.UNICAST)

export const AttrFlag = {
  OPTIONAL: 0x80,
  TRANSITIVE: 0x40,
  PARTIAL: 0x20,
  EXTENDED_LENGTH: 0x10,
} as const

export const AttrCode = {
  ORIGIN: 1,
  AS_PATH: 2,
  NEXT_HOP: 3,
  MULTI_EXIT_DISC: 4,
  LOCAL_PREF: 5,
  ATOMIC_AGGREGATE: 6,
  AGGREGATOR: 7,
  COMMUNITIES: 8,
  ORIGINATOR_ID: 9,
  CLUSTER_LIST: 10,
  MP_REACH_NLRI: 14,
  MP_UNREACH_NLRI: 15,
  EXTENDED_COMMUNITIES: 16,
  AS4_PATH: 17,
  AS4_AGGREGATOR: 18,
  LARGE_COMMUNITY: 32,
} as const

export const Origin = { IGP: 0, EGP: 1, INCOMPLETE: 2 } as const
export type OriginValue = 0 | 1 | 2

export const SegmentType = {
  AS_SET: 1,
  AS_SEQUENCE: 2,
  AS_CONFED_SEQUENCE: 3,
  AS_CONFED_SET: 4,
} as const
export type SegmentTypeValue = 1 | 2 | 3 | 4

export const OptParamType = {
  CAPABILITIES: 2,
  /** RFC 9072: marks the extended optional parameters length encoding. */
  EXTENDED_LENGTH: 255,
} as const

export const CapCode = {
  MULTIPROTOCOL: 1,
  ROUTE_REFRESH: 2,
  EXTENDED_MESSAGE: 6,
  GRACEFUL_RESTART: 64,
  FOUR_OCTET_AS: 65,
  ADD_PATH: 69,
  ENHANCED_ROUTE_REFRESH: 70,
} as const

/** RFC 7313 §3.2: the message subtype carried in ROUTE-REFRESH's reserved octet. */
export const RouteRefreshSubtype = { NORMAL: 0, BORR: 1, EORR: 2 } as const

export const ErrorCode = {
  MESSAGE_HEADER: 1,
  OPEN_MESSAGE: 2,
  UPDATE_MESSAGE: 3,
  HOLD_TIMER_EXPIRED: 4,
  FSM: 5,
  CEASE: 6,
  ROUTE_REFRESH_MESSAGE: 7,
  SEND_HOLD_TIMER_EXPIRED: 8,
} as const

export const HeaderSubcode = {
  CONNECTION_NOT_SYNCHRONIZED: 1,
  BAD_MESSAGE_LENGTH: 2,
  BAD_MESSAGE_TYPE: 3,
} as const

export const OpenSubcode = {
  UNSPECIFIC: 0,
  UNSUPPORTED_VERSION_NUMBER: 1,
  BAD_PEER_AS: 2,
  BAD_BGP_IDENTIFIER: 3,
  UNSUPPORTED_OPTIONAL_PARAMETER: 4,
  UNACCEPTABLE_HOLD_TIME: 6,
  UNSUPPORTED_CAPABILITY: 7,
} as const

export const UpdateSubcode = {
  MALFORMED_ATTRIBUTE_LIST: 1,
  UNRECOGNIZED_WELL_KNOWN_ATTRIBUTE: 2,
  MISSING_WELL_KNOWN_ATTRIBUTE: 3,
  ATTRIBUTE_FLAGS_ERROR: 4,
  ATTRIBUTE_LENGTH_ERROR: 5,
  INVALID_ORIGIN_ATTRIBUTE: 6,
  INVALID_NEXT_HOP_ATTRIBUTE: 8,
  OPTIONAL_ATTRIBUTE_ERROR: 9,
  INVALID_NETWORK_FIELD: 10,
  MALFORMED_AS_PATH: 11,
} as const

export const FsmSubcode = {
  UNSPECIFIED: 0,
  UNEXPECTED_MESSAGE_IN_OPENSENT: 1,
  UNEXPECTED_MESSAGE_IN_OPENCONFIRM: 2,
  UNEXPECTED_MESSAGE_IN_ESTABLISHED: 3,
} as const

export const CeaseSubcode = {
  MAXIMUM_NUMBER_OF_PREFIXES_REACHED: 1,
  ADMINISTRATIVE_SHUTDOWN: 2,
  PEER_DECONFIGURED: 3,
  ADMINISTRATIVE_RESET: 4,
  CONNECTION_REJECTED: 5,
  OTHER_CONFIGURATION_CHANGE: 6,
  CONNECTION_COLLISION_RESOLUTION: 7,
  OUT_OF_RESOURCES: 8,
  HARD_RESET: 9,
  BFD_DOWN: 10,
} as const

export const RouteRefreshErrorSubcode = { INVALID_MESSAGE_LENGTH: 1 } as const
