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
