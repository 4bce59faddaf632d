// The captured-session fixture text format: one BGP message per line as lowercase hex, with `#` comment
// lines allowed. Splits a raw byte stream at BGP message boundaries using only marker and length (no decoding:
// that is the codec's job, and these fixtures exist to test it).

export const MESSAGE_TYPES: Readonly<Record<number, string>> = { 1: 'OPEN', 2: 'UPDATE', 3: 'NOTIFICATION', 4: 'KEEPALIVE', 5: 'ROUTE-REFRESH' }

/** Splits a TCP stream into whole BGP messages; throws naming the byte offset on a broken frame. */
export function splitMessages(stream: Buffer, maxLength = 65535): Buffer[] {
  const out: Buffer[] = []
  let off = 0
  while (off < stream.length) {
    if (stream.length - off < 19) throw new Error(`stream offset ${off}: ${stream.length - off} trailing bytes, shorter than a BGP header`)
    for (let i = 0; i < 16; i++) {
      if (stream[off + i] !== 0xff) throw new Error(`stream offset ${off + i}: marker byte is 0x${stream[off + i]!.toString(16)}, not 0xff`)
    }
    const len = stream.readUInt16BE(off + 16)
    if (len < 19 || len > maxLength) throw new Error(`stream offset ${off + 16}: message length ${len} outside 19..${maxLength}`)
    if (off + len > stream.length) throw new Error(`stream offset ${off}: message of ${len} bytes cut short at ${stream.length - off}`)
    out.push(stream.subarray(off, off + len))
    off += len
  }
  return out
}

export function messageType(msg: Buffer): string {
  const t = msg[18] ?? 0
  return MESSAGE_TYPES[t] ?? `TYPE-${t}`
}

/** A NOTIFICATION's code/subcode, or undefined for other messages. */
export function notificationCode(msg: Buffer): { code: number; subcode: number } | undefined {
  if (msg[18] !== 3 || msg.length < 21) return undefined
  return { code: msg[19]!, subcode: msg[20]! }
}

export function toHexLines(messages: readonly Buffer[]): string {
  return messages.map((m) => m.toString('hex')).join('\n') + (messages.length > 0 ? '\n' : '')
}

/** Parses a .hex fixture back into messages; `#` lines and blank lines are skipped. */
export function fromHexLines(text: string, file = 'fixture'): Buffer[] {
  const out: Buffer[] = []
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    if (!/^([0-9a-f]{2})+$/.test(line)) throw new Error(`${file}:${i + 1}: not an even-length lowercase hex string`)
    out.push(Buffer.from(line, 'hex'))
  })
  return out
}

/** Capability codes and values an OPEN offers (RFC 5492), read just deep enough to describe a fixture. */
export function openCapabilities(open: Buffer): { code: number; value: Buffer }[] {
  if (open[18] !== 1) throw new Error(`message type ${open[18]} is not OPEN`)
  const optLen = open[28] ?? 0
  const caps: { code: number; value: Buffer }[] = []
  let off = 29
  const end = 29 + optLen
  while (off + 2 <= end) {
    const type = open[off]!
    const len = open[off + 1]!
    if (type === 2) {
      let c = off + 2
      while (c + 2 <= off + 2 + len) {
        const clen = open[c + 1]!
        caps.push({ code: open[c]!, value: open.subarray(c + 2, c + 2 + clen) })
        c += 2 + clen
      }
    }
    off += 2 + len
  }
  return caps
}

export interface Negotiated {
  /** Both OPENs carried capability 65 (RFC 6793). */
  readonly as4: boolean
  /** Families ("AFI/SAFI") whose NLRI carry path identifiers in this direction (RFC 7911). */
  readonly addPath: readonly string[]
  /** Both carried capability 6 (RFC 8654). */
  readonly extendedMessage: boolean
  readonly enhancedRouteRefresh: boolean
}

/** What messages from the sender of `fromOpen` to the sender of `toOpen` are encoded with. */
export function negotiated(fromOpen: Buffer, toOpen: Buffer): Negotiated {
  const from = openCapabilities(fromOpen)
  const to = openCapabilities(toOpen)
  const both = (code: number): boolean => from.some((c) => c.code === code) && to.some((c) => c.code === code)
  // Add-path value: repeated AFI(2) SAFI(1) send/receive(1), where 1 = receive, 2 = send, 3 = both.
  const modes = (caps: { code: number; value: Buffer }[]): Map<string, number> => {
    const m = new Map<string, number>()
    for (const c of caps.filter((x) => x.code === 69)) {
      for (let i = 0; i + 4 <= c.value.length; i += 4) m.set(`${c.value.readUInt16BE(i)}/${c.value[i + 2]}`, c.value[i + 3]!)
    }
    return m
  }
  const send = modes(from)
  const recv = modes(to)
  const addPath = [...send].filter(([fam, mode]) => (mode & 2) !== 0 && ((recv.get(fam) ?? 0) & 1) !== 0).map(([fam]) => fam)
  return { as4: both(65), addPath, extendedMessage: both(6), enhancedRouteRefresh: both(70) }
}
