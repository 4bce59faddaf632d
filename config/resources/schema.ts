// A small table-driven schema walker: checks a parsed YAML/JSON value against a field table, reports
// unknown and unsupported fields, wrong types and bad formats with their paths, and returns the value
// with only the fields that passed. Cross-field rules live in validate.ts, not here.

import { type PathSegment, type Problems } from './errors.js'
import { checkLabelKey, checkLabelValue, describeValue, parseASNumber } from './scalars.js'

export type Field =
  | { readonly t: 'string'; readonly enum?: readonly string[]; readonly check?: (v: string) => string | undefined }
  | { readonly t: 'bool' }
  | { readonly t: 'int'; readonly min: number; readonly max: number }
  | { readonly t: 'asn' }
  | { readonly t: 'list'; readonly of: Field; readonly min?: number; readonly max?: number }
  | { readonly t: 'labels' | 'annotations' }
  | ObjectField

export interface ObjectField {
  readonly t: 'object'
  readonly fields: Readonly<Record<string, Field>>
  readonly required?: readonly string[]
  /** Calico fields pinto knows of but does not implement: an error that says so, never silently ignored. */
  readonly unsupported?: readonly string[]
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * A scalar where Calico wants a string, as Calico's client reads it: its YAML decoder turns a bare
 * `true` or `42` into "true" or "42" when the Go field is a string (a label `enabled: true` is the
 * label "true"). Mappings, lists and null stay refused.
 */
function asString(raw: unknown): string | undefined {
  if (typeof raw === 'string') return raw
  if (typeof raw === 'boolean') return raw ? 'true' : 'false'
  if (typeof raw === 'number' && Number.isFinite(raw)) return String(raw)
  return undefined
}

/** Returns the checked value, or undefined (with problems recorded) when it is unusable. */
export function readField(raw: unknown, field: Field, path: readonly PathSegment[], problems: Problems): unknown {
  const wrongType = (expected: string): undefined => {
    problems.add(path, `expected ${expected}, got ${describeValue(raw)}`)
    return undefined
  }
  switch (field.t) {
    case 'string': {
      const text = asString(raw)
      if (text === undefined) return wrongType('a string')
      if (field.enum !== undefined && !field.enum.includes(text)) {
        problems.add(path, `${JSON.stringify(text)} is not one of ${field.enum.join(', ')}`)
        return undefined
      }
      const reason = field.check?.(text)
      if (reason !== undefined) {
        problems.add(path, reason)
        return undefined
      }
      return text
    }
    case 'bool':
      return typeof raw === 'boolean' ? raw : wrongType('true or false')
    case 'int': {
      if (typeof raw !== 'number' || !Number.isInteger(raw)) return wrongType('an integer')
      if (raw < field.min || raw > field.max) {
        problems.add(path, `${raw} is out of range ${field.min}-${field.max}`)
        return undefined
      }
      return raw
    }
    case 'asn': {
      const n = parseASNumber(raw)
      if (typeof n === 'string') {
        problems.add(path, n)
        return undefined
      }
      return n
    }
    case 'list': {
      if (!Array.isArray(raw)) return wrongType('a list')
      if (field.min !== undefined && raw.length < field.min) problems.add(path, `needs at least ${field.min} item(s)`)
      if (field.max !== undefined && raw.length > field.max) problems.add(path, `allows at most ${field.max} items, got ${raw.length}`)
      const out = raw.map((item, i) => readField(item, field.of, [...path, i], problems))
      // A list with a bad item is dropped whole, so later rules never see shifted indices.
      return out.includes(undefined) ? undefined : out
    }
    case 'labels':
    case 'annotations': {
      if (!isPlainObject(raw)) return wrongType('a mapping of strings')
      const out: Record<string, string> = {}
      for (const [k, v] of Object.entries(raw)) {
        const keyReason = checkLabelKey(k)
        if (keyReason !== undefined) problems.add([...path, k], keyReason)
        else {
          const text = asString(v)
          const valueReason = text === undefined ? `expected a string, got ${describeValue(v)}` : field.t === 'labels' ? checkLabelValue(text) : undefined
          if (valueReason !== undefined || text === undefined) problems.add([...path, k], valueReason ?? '')
          else out[k] = text
        }
      }
      return out
    }
    case 'object':
      return readObject(raw, field, path, problems)
    default: {
      const never: never = field
      throw new Error(`unknown field type ${JSON.stringify(never)}`)
    }
  }
}

function readObject(raw: unknown, field: ObjectField, path: readonly PathSegment[], problems: Problems): unknown {
  if (!isPlainObject(raw)) {
    problems.add(path, `expected a mapping, got ${describeValue(raw)}`)
    return undefined
  }
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(raw)) {
    const sub = field.fields[key]
    if (sub === undefined) {
      problems.add(
        [...path, key],
        field.unsupported?.includes(key) === true
          ? `${key} is a Calico field that pinto does not support`
          : `unknown field ${JSON.stringify(key)}${suggest(key, Object.keys(field.fields))}`,
      )
      continue
    }
    // Go's JSON decoding treats null as absent; so does YAML's bare `field:`.
    if (value === null) continue
    const checked = readField(value, sub, [...path, key], problems)
    if (checked !== undefined) out[key] = checked
  }
  for (const key of field.required ?? []) {
    if (raw[key] === undefined || raw[key] === null) problems.add([...path, key], `${key} is required`)
  }
  return out
}

/**
 * A "did you mean" for every unknown field: the nearest known name (case ignored, a swap of two letters
 * counting as one edit) when it is near enough to be meant, else the list of the fields this place takes.
 */
export function suggest(key: string, known: readonly string[]): string {
  const lower = key.toLowerCase()
  let best: { name: string; d: number } | undefined
  for (const k of known) {
    const d = editDistance(k.toLowerCase(), lower)
    if (best === undefined || d < best.d) best = { name: k, d }
  }
  if (best !== undefined && best.d <= Math.max(1, Math.floor(Math.min(best.name.length, key.length) / 3))) return ` (did you mean ${JSON.stringify(best.name)}?)`
  return known.length > 0 ? ` (fields here: ${[...known].sort().join(', ')})` : ''
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[]
      const up = d[i - 1] as number[]
      row[j] = Math.min((up[j] as number) + 1, (row[j - 1] as number) + 1, (up[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1)
    }
  }
  return (d[a.length] as number[])[b.length] as number
}
