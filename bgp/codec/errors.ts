// BgpError: every codec failure, carrying the NOTIFICATION it maps to and its RFC 7606 consequence.
// Actions are ordered numbers so "the strongest action wins" (RFC 7606 §3(h)) is a comparison.
// One table maps code/subcode to text for logs, the API and `pintoctl bgp decode`.

import { ErrorCode } from './constants.js'

export const ErrorAction = {
  ATTRIBUTE_DISCARD: 1,
  TREAT_AS_WITHDRAW: 2,
  AFI_SAFI_DISABLE: 3,
  SESSION_RESET: 4,
} as const
export type ErrorActionValue = (typeof ErrorAction)[keyof typeof ErrorAction]

const ACTION_NAMES: Record<ErrorActionValue, string> = {
  1: 'attribute-discard',
  2: 'treat-as-withdraw',
  3: 'afi-safi-disable',
  4: 'session-reset',
}

export function actionName(action: ErrorActionValue): string {
  return ACTION_NAMES[action]
}

export interface BgpErrorInit {
  readonly code: number
  readonly subcode: number
  readonly data?: Uint8Array
  readonly action?: ErrorActionValue
  /** Byte offset inside the message where the problem was found. */
  readonly offset?: number
  readonly detail?: string
  /** The family concerned, for AFI/SAFI disable (`afi << 8 | safi`). */
  readonly family?: number
  /** The attribute concerned, when an attribute caused it. */
  readonly attrCode?: number
}

export class BgpError extends Error {
  readonly code: number
  readonly subcode: number
  readonly data: Uint8Array
  readonly action: ErrorActionValue
  readonly offset: number | undefined
  readonly family: number | undefined
  readonly attrCode: number | undefined
  readonly detail: string | undefined

  constructor(init: BgpErrorInit) {
    const text = notificationText(init.code, init.subcode)
    super(init.detail ? `${text}: ${init.detail}` : text)
    this.name = 'BgpError'
    this.code = init.code
    this.subcode = init.subcode
    this.data = init.data ?? new Uint8Array(0)
    this.action = init.action ?? ErrorAction.SESSION_RESET
    this.offset = init.offset
    this.family = init.family
    this.attrCode = init.attrCode
    this.detail = init.detail
  }

  get actionName(): string {
    return actionName(this.action)
  }

  /** A copy with another offset; readers report positions relative to a field, callers shift them. */
  at(offset: number): BgpError {
    return new BgpError({ ...this.init(), offset })
  }

  withAction(action: ErrorActionValue): BgpError {
    return new BgpError({ ...this.init(), action })
  }

  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      subcode: this.subcode,
      text: notificationText(this.code, this.subcode),
      message: this.message,
      action: this.actionName,
      ...(this.offset !== undefined ? { offset: this.offset } : {}),
      ...(this.data.length > 0 ? { data: Buffer.from(this.data).toString('hex') } : {}),
    }
  }

  private init(): BgpErrorInit {
    return {
      code: this.code,
      subcode: this.subcode,
      data: this.data,
      action: this.action,
      ...(this.offset !== undefined ? { offset: this.offset } : {}),
      ...(this.detail !== undefined ? { detail: this.detail } : {}),
      ...(this.family !== undefined ? { family: this.family } : {}),
      ...(this.attrCode !== undefined ? { attrCode: this.attrCode } : {}),
    }
  }
}

/** Of two errors, the one whose action is stronger; the first on a tie (RFC 7606 §3(h)). */
export function strongest(a: BgpError | undefined, b: BgpError): BgpError {
  return a === undefined || b.action > a.action ? b : a
}

const CODE_TEXT: Record<number, string> = {
  [ErrorCode.MESSAGE_HEADER]: 'Message Header Error',
  [ErrorCode.OPEN_MESSAGE]: 'OPEN Message Error',
  [ErrorCode.UPDATE_MESSAGE]: 'UPDATE Message Error',
  [ErrorCode.HOLD_TIMER_EXPIRED]: 'Hold Timer Expired',
  [ErrorCode.FSM]: 'Finite State Machine Error',
  [ErrorCode.CEASE]: 'Cease',
  [ErrorCode.ROUTE_REFRESH_MESSAGE]: 'ROUTE-REFRESH Message Error',
  [ErrorCode.SEND_HOLD_TIMER_EXPIRED]: 'Send Hold Timer Expired',
}

// RFC 4271 §4.5, RFC 5492 §5, RFC 4486 §4, RFC 6608 §4, RFC 7313 §5, RFC 8538 §3.
const SUBCODE_TEXT: Record<number, Record<number, string>> = {
  [ErrorCode.MESSAGE_HEADER]: {
    1: 'Connection Not Synchronized',
    2: 'Bad Message Length',
    3: 'Bad Message Type',
  },
  [ErrorCode.OPEN_MESSAGE]: {
    1: 'Unsupported Version Number',
    2: 'Bad Peer AS',
    3: 'Bad BGP Identifier',
    4: 'Unsupported Optional Parameter',
    5: 'Authentication Failure (deprecated)',
    6: 'Unacceptable Hold Time',
    7: 'Unsupported Capability',
  },
  [ErrorCode.UPDATE_MESSAGE]: {
    1: 'Malformed Attribute List',
    2: 'Unrecognized Well-known Attribute',
    3: 'Missing Well-known Attribute',
    4: 'Attribute Flags Error',
    5: 'Attribute Length Error',
    6: 'Invalid ORIGIN Attribute',
    7: 'AS Routing Loop (deprecated)',
    8: 'Invalid NEXT_HOP Attribute',
    9: 'Optional Attribute Error',
    10: 'Invalid Network Field',
    11: 'Malformed AS_PATH',
  },
  [ErrorCode.FSM]: {
    0: 'Unspecified Error',
    1: 'Receive Unexpected Message in OpenSent State',
    2: 'Receive Unexpected Message in OpenConfirm State',
    3: 'Receive Unexpected Message in Established State',
  },
  [ErrorCode.CEASE]: {
    1: 'Maximum Number of Prefixes Reached',
    2: 'Administrative Shutdown',
    3: 'Peer De-configured',
    4: 'Administrative Reset',
    5: 'Connection Rejected',
    6: 'Other Configuration Change',
    7: 'Connection Collision Resolution',
    8: 'Out of Resources',
    9: 'Hard Reset',
    10: 'BFD Down',
  },
  [ErrorCode.ROUTE_REFRESH_MESSAGE]: {
    1: 'Invalid Message Length',
  },
}

/** "OPEN Message Error / Bad Peer AS"; unknown numbers are shown as numbers, never dropped. */
export function notificationText(code: number, subcode: number): string {
  const c = CODE_TEXT[code] ?? `Unknown Error Code ${code}`
  if (subcode === 0 && SUBCODE_TEXT[code]?.[0] === undefined) return c
  const s = SUBCODE_TEXT[code]?.[subcode] ?? `Unknown Subcode ${subcode}`
  return `${c} / ${s}`
}
