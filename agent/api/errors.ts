// The API's one error catalogue: every failure a client can see has a stable code, an HTTP status and
// a body `{error: {code, message, field?}}`. Handlers throw ApiError; nothing else decides statuses.

export const ERRORS = {
  'invalid-parameter': 400,
  /** Wrong at the HTTP level: framing, a bad %-escape, no Host. */
  'bad-request': 400,
  unauthenticated: 401,
  'read-only': 403,
  'not-found': 404,
  'unknown-peer': 404,
  'no-dataplane': 404,
  'method-not-allowed': 405,
  'request-timeout': 408,
  'body-too-large': 413,
  'unsupported-media-type': 415,
  /** An Expect header other than 100-continue. */
  'expectation-failed': 417,
  'headers-too-large': 431,
  'not-ready': 503,
  internal: 500,
  'not-implemented': 501,
} as const

export type ErrorCode = keyof typeof ERRORS

export interface ErrorBody {
  readonly error: { readonly code: ErrorCode; readonly message: string; readonly field?: string }
}

export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** The query parameter or body field at fault. */
    readonly field?: string,
  ) {
    super(message)
    this.name = 'ApiError'
    this.status = ERRORS[code]
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.field !== undefined ? { field: this.field } : {}) } }
  }
}

/** The OpenAPI schema of an error body, for every route's non-2xx responses. */
export const errorSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', enum: Object.keys(ERRORS) },
        message: { type: 'string' },
        field: { type: 'string' },
      },
    },
  },
} as const

interface ValidationItem {
  readonly instancePath?: string
  readonly keyword?: string
  readonly message?: string
  readonly params?: Readonly<Record<string, unknown>>
}

/** Turns a fastify/ajv schema failure into an ApiError naming the parameter (`limit`, `table`...). */
export function fromValidation(context: string | undefined, items: readonly ValidationItem[]): ApiError {
  const v = items[0] ?? {}
  const p = v.params ?? {}
  const extra = typeof p['additionalProperty'] === 'string' ? p['additionalProperty'] : undefined
  const missing = typeof p['missingProperty'] === 'string' ? p['missingProperty'] : undefined
  const field = extra ?? missing ?? (v.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.')
  const where = context === 'querystring' ? 'query parameter' : context === 'params' ? 'path parameter' : (context ?? 'request')
  let why = v.message ?? 'is invalid'
  if (extra !== undefined) why = 'is not a known parameter'
  else if (v.keyword === 'enum' && Array.isArray(p['allowedValues'])) why = `must be one of ${(p['allowedValues'] as unknown[]).join(', ')}`
  return new ApiError('invalid-parameter', `${where} ${field}: ${why}`, field)
}
