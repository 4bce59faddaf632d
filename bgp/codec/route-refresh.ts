// ROUTE-REFRESH (RFC 2918) with the message subtypes of enhanced route refresh (RFC 7313):
// 0 normal request, 1 Beginning of RIB Route Refresh, 2 End of RIB Route Refresh.

import { ErrorCode, HEADER_LENGTH, RouteRefreshErrorSubcode } from './constants.js'
import { Writer } from './buffer.js'
import { BgpError } from './errors.js'

export interface RouteRefreshMessage {
  readonly type: 'route-refresh'
  readonly afi: number
  readonly safi: number
  /** RFC 7313 §3.2; values other than 0, 1, 2 are to be ignored by the receiver. */
  readonly subtype: number
}

export function decodeRouteRefresh(frame: Uint8Array): RouteRefreshMessage {
  // RFC 7313 §5: any length but 4 after the header is an error whose data is the whole message.
  // Outbound Route Filtering (RFC 5291), the only longer form, is not supported.
  if (frame.length !== HEADER_LENGTH + 4) {
    throw new BgpError({
      code: ErrorCode.ROUTE_REFRESH_MESSAGE,
      subcode: RouteRefreshErrorSubcode.INVALID_MESSAGE_LENGTH,
      detail: `length ${frame.length}, expected 23`,
      data: frame.slice(),
      offset: 16,
    })
  }
  return {
    type: 'route-refresh',
    afi: (frame[HEADER_LENGTH]! << 8) | frame[HEADER_LENGTH + 1]!,
    subtype: frame[HEADER_LENGTH + 2]!,
    safi: frame[HEADER_LENGTH + 3]!,
  }
}

export function encodeRouteRefresh(w: Writer, msg: RouteRefreshMessage): void {
  w.u16(msg.afi).u8(msg.subtype).u8(msg.safi)
}
