// `pintoctl bgp decode [FILE|-] [--hex] [--as2] [--add-path] [--extended]`: reads a stream of BGP
// messages (raw bytes, or hex text with optional `#` comments) and prints one JSON object per message.
// Session options follow the OPENs seen in the stream unless flags pin them. Any malformed message
// is printed as an error object with code, subcode and byte offset, and the exit code is then 1.

import { readFile } from 'node:fs/promises'
import {
  BgpError,
  HEADER_LENGTH,
  MAX_EXTENDED_MESSAGE_LENGTH,
  MAX_MESSAGE_LENGTH,
  checkHeader,
  IPV4_UNICAST,
  IPV6_UNICAST,
  codecOptions,
  decodeMessage,
  familyKey,
  messageToJson,
  notificationText,
  type CodecOptions,
} from '../../bgp/index.js'
import { BGP_USAGE as USAGE } from './usage.js'


export async function bgpCommand(args: readonly string[]): Promise<number> {
  const [sub, ...rest] = args
  if (sub !== 'decode') {
    process.stderr.write(sub === undefined || sub === '--help' || sub === '-h' ? USAGE : `pintoctl bgp: unknown command ${JSON.stringify(sub)}\n${USAGE}`)
    return sub === '--help' || sub === '-h' ? 0 : 2
  }
  return decodeCommand(rest)
}

interface DecodeFlags {
  file: string
  hex: boolean
  as2?: boolean
  addPath?: boolean
  extended?: boolean
}

function parseFlags(args: readonly string[]): DecodeFlags | string {
  const flags: DecodeFlags = { file: '-', hex: false }
  let fileSeen = false
  for (const a of args) {
    if (a === '--hex') flags.hex = true
    else if (a === '--as2') flags.as2 = true
    else if (a === '--add-path') flags.addPath = true
    else if (a === '--extended') flags.extended = true
    else if (a.startsWith('--')) return `unknown flag ${a}`
    else if (fileSeen) return `more than one input file (${flags.file}, ${a})`
    else {
      flags.file = a
      fileSeen = true
    }
  }
  return flags
}

/** Hex text to bytes; an error names the offending character's line and column. */
export function parseHexText(text: string): Buffer {
  const digits: string[] = []
  const lines = text.split('\n')
  for (let ln = 0; ln < lines.length; ln++) {
    const line = lines[ln]!.replace(/#.*$/, '')
    for (let col = 0; col < line.length; col++) {
      const c = line[col]!
      if (/[0-9a-fA-F]/.test(c)) digits.push(c)
      else if (!/\s/.test(c)) throw new Error(`line ${ln + 1}, column ${col + 1}: ${JSON.stringify(c)} is not a hex digit`)
    }
  }
  if (digits.length % 2 !== 0) throw new Error(`odd number of hex digits (${digits.length})`)
  return Buffer.from(digits.join(''), 'hex')
}

async function readInput(file: string): Promise<Buffer> {
  if (file !== '-') return readFile(file)
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

function errorJson(err: BgpError, messageOffset: number | undefined): Record<string, unknown> {
  const json = err.toJSON()
  const offset = err.offset === undefined ? messageOffset : (messageOffset ?? 0) + err.offset
  return { type: 'error', ...json, ...(offset !== undefined ? { offset } : {}) }
}

async function decodeCommand(args: readonly string[]): Promise<number> {
  const flags = parseFlags(args)
  if (typeof flags === 'string') {
    process.stderr.write(`pintoctl bgp decode: ${flags}\n${USAGE}`)
    return 2
  }
  let input: Buffer
  try {
    const raw = await readInput(flags.file)
    input = flags.hex ? parseHexText(raw.toString('utf8')) : raw
  } catch (err) {
    process.stderr.write(`pintoctl bgp decode: ${flags.file}: ${err instanceof Error ? err.message : String(err)}\n`)
    return 1
  }
  let opts: CodecOptions = codecOptions({
    as4: flags.as2 !== true,
    extendedMessage: flags.extended === true,
    addPath: flags.addPath ? new Set([IPV4_UNICAST, IPV6_UNICAST]) : new Set(),
  })
  let malformed = false
  const out: string[] = []
  const report = (json: Record<string, unknown>, err: BgpError): void => {
    malformed = true
    out.push(JSON.stringify(json))
    process.stderr.write(`pintoctl bgp decode: byte ${String(json.offset)}: ${notificationText(err.code, err.subcode)} (code ${err.code}, subcode ${err.subcode}, ${err.actionName})${err.detail ? `: ${err.detail}` : ''}\n`)
  }
  // Frame one message at a time, so what an OPEN negotiates (extended message) applies to what follows.
  let offset = 0
  while (offset < input.length) {
    if (input.length - offset < HEADER_LENGTH) {
      malformed = true
      out.push(JSON.stringify({ type: 'error', message: `${input.length - offset} bytes of an incomplete header at the end`, offset }))
      process.stderr.write(`pintoctl bgp decode: byte ${offset}: ${input.length - offset} bytes of an incomplete header at the end of the input\n`)
      break
    }
    let length: number
    try {
      length = checkHeader(input, offset, opts.extendedMessage ? MAX_EXTENDED_MESSAGE_LENGTH : MAX_MESSAGE_LENGTH)
    } catch (err) {
      if (!(err instanceof BgpError)) throw err
      // Framing is lost after a bad header: nothing further can be read.
      report(errorJson(err.at(err.offset ?? offset), undefined), err)
      break
    }
    if (offset + length > input.length) {
      malformed = true
      out.push(JSON.stringify({ type: 'error', message: `message of ${length} bytes cut short at ${input.length - offset}`, offset }))
      process.stderr.write(`pintoctl bgp decode: byte ${offset}: message of ${length} bytes cut short at ${input.length - offset}\n`)
      break
    }
    const frame = input.subarray(offset, offset + length)
    try {
      const msg = decodeMessage(frame, opts)
      out.push(JSON.stringify({ offset, ...messageToJson(msg) }))
      if (msg.type === 'update' && msg.error) report(errorJson(msg.error, offset), msg.error)
      if (msg.type === 'open') opts = inferFromOpen(msg.capabilities, opts, flags)
    } catch (err) {
      if (!(err instanceof BgpError)) throw err
      report(errorJson(err, offset), err)
    }
    offset += length
  }
  process.stdout.write(out.length > 0 ? out.join('\n') + '\n' : '')
  return malformed ? 1 : 0
}

/** After an OPEN, decode the rest as that speaker would send: its 4-octet AS, add-path and size. */
function inferFromOpen(
  caps: ReadonlyArray<{ kind: string; families?: ReadonlyArray<{ afi: number; safi: number; mode?: number }> }>,
  opts: CodecOptions,
  flags: DecodeFlags,
): CodecOptions {
  const as4 = flags.as2 === true ? false : caps.some((c) => c.kind === 'four-octet-as')
  const extendedMessage = flags.extended === true || caps.some((c) => c.kind === 'extended-message')
  let addPath = opts.addPath
  if (flags.addPath === undefined) {
    const sends = new Set<number>()
    for (const c of caps) {
      if (c.kind !== 'add-path') continue
      for (const f of c.families ?? []) if (f.mode === 2 || f.mode === 3) sends.add(familyKey(f.afi, f.safi))
    }
    addPath = sends
  }
  return codecOptions({ as4, extendedMessage, addPath })
}
