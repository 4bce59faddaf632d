// The `pinto.dev/bfd` annotation that turns BFD on for a BGPPeer (or, on the BGPConfiguration, for the
// node-to-node mesh) while the resource stays valid Calico YAML. Pure: text in, BFD parameters out, or
// an error naming the annotation and the item at fault.

import { parseDuration } from '../config/index.js'
import type { BfdParameters } from '../bgp/index.js'

export const BFD_ANNOTATION = 'pinto.dev/bfd'

/** FRR's bfdd defaults: 300 ms both ways, multiplier 3. */
export const BFD_DEFAULTS: BfdParameters = { desiredMinTxUs: 300_000, requiredMinRxUs: 300_000, detectMult: 3 }

/**
 * `"true"`/`"enabled"` for the defaults, or comma-separated items `minTx=100ms`, `minRx=100ms`,
 * `multiplier=3` (intervals as Go durations, 10 ms to 60 s). `"false"` or no annotation: BFD off.
 */
export function parseBfdAnnotation(annotations: Readonly<Record<string, string>> | undefined): BfdParameters | undefined {
  const text = annotations?.[BFD_ANNOTATION]?.trim()
  if (text === undefined || text === '' || text === 'false' || text === 'disabled') return undefined
  if (text === 'true' || text === 'enabled') return BFD_DEFAULTS
  let p: { -readonly [K in keyof BfdParameters]: number } = { ...BFD_DEFAULTS }
  const where = `metadata.annotations["${BFD_ANNOTATION}"]`
  for (const item of text.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
    const eq = item.indexOf('=')
    if (eq < 0) throw new Error(`${where}: "${item}" is not key=value (keys: minTx, minRx, multiplier)`)
    const key = item.slice(0, eq).trim()
    const value = item.slice(eq + 1).trim()
    const interval = (): number => {
      let ms: number
      try {
        ms = parseDuration(value)
      } catch (err) {
        throw new Error(`${where}: ${key}: ${(err as Error).message}`)
      }
      if (!(ms >= 10 && ms <= 60_000)) throw new Error(`${where}: ${key}=${value}: the interval must be 10ms to 60s`)
      return Math.round(ms * 1000)
    }
    switch (key) {
      case 'minTx':
        p = { ...p, desiredMinTxUs: interval() }
        break
      case 'minRx':
        p = { ...p, requiredMinRxUs: interval() }
        break
      case 'multiplier': {
        const n = Number(value)
        if (!Number.isInteger(n) || n < 1 || n > 255) throw new Error(`${where}: multiplier=${value}: must be an integer 1–255`)
        p = { ...p, detectMult: n }
        break
      }
      case 'auth':
      case 'authentication':
        throw new Error(`${where}: ${key}: BFD authentication is not supported by pinto (sessions run without it)`)
      default:
        throw new Error(`${where}: unknown key "${key}" (keys: minTx, minRx, multiplier)`)
    }
  }
  return p
}
