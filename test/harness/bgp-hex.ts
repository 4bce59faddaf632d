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
