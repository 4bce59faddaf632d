// Annotated byte fixtures: hex digits with `#` comments, one field per line, so a fixture reads
// like the RFC's message diagrams. `hex` strips comments and spaces and returns the bytes.

export function hex(strings: TemplateStringsArray | string, ...values: unknown[]): Buffer {
  const text = typeof strings === 'string' ? strings : strings.reduce((acc, s, i) => acc + s + (i < values.length ? String(values[i]) : ''), '')
  const digits = text
    .split('\n')
    .map((line) => line.replace(/#.*$/, ''))
    .join('')
    .replace(/\s+/g, '')
  if (!/^([0-9a-fA-F]{2})*$/.test(digits)) throw new Error(`fixture is not whole hex bytes: ${digits}`)
  return Buffer.from(digits, 'hex')
}

export const MARKER = 'ffffffffffffffffffffffffffffffff'

/** An UPDATE from annotated hex parts, its lengths (message, withdrawn routes, attributes) filled in. */
export function updateBytes(parts: { withdrawn?: string; attrs?: string; nlri?: string }): Buffer {
  const w = hex(parts.withdrawn ?? '')
  const a = hex(parts.attrs ?? '')
  const n = hex(parts.nlri ?? '')
  const len = 19 + 2 + w.length + 2 + a.length + n.length
  return Buffer.concat([hex(MARKER), Buffer.from([len >> 8, len & 255, 2]), Buffer.from([w.length >> 8, w.length & 255]), w, Buffer.from([a.length >> 8, a.length & 255]), a, n])
}
