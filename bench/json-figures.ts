// The benches' `--json FILE` option: a bench's summary figures as one JSON document beside its printed
// report (which stays the bench's report for people). bench/builds reads these files to print two builds
// side by side; the format is kept small and flat so a bench of another build can be read the same way.

import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'

/** One figure of a bench's summary. Every figure written is a cost: lower is better. */
export interface Figure {
  readonly name: string
  /** null when the run did not reach it (a receiver that never finished, a percentile of nothing). */
  readonly value: number | null
  readonly unit: 's' | 'ms' | 'MB' | '%'
  /**
   * Not pinto's figure but the anchor's run beside it (BIRD 2, etcd alone): the same program in every build,
   * so its change between two builds' runs is the machine's noise.
   */
  readonly anchor?: boolean
}

export interface FiguresFile {
  readonly bench: string
  readonly argv: readonly string[]
  /** The 1, 5 and 15 minute load averages when the figures were written. */
  readonly load: readonly number[]
  readonly figures: readonly Figure[]
}

/** The path given as `--json FILE`, or undefined when the option is absent. */
export function jsonPathArg(): string | undefined {
  const i = process.argv.indexOf('--json')
  if (i < 0) return undefined
  const path = process.argv[i + 1]
  if (path === undefined || path.startsWith('--')) throw new Error(`--json: expected a file path, got ${JSON.stringify(path)}`)
  return path
}

/** A figure with a value that is finite, or null (JSON has no NaN). */
export function figure(name: string, value: number, unit: Figure['unit'], anchor = false): Figure {
  return { name, value: Number.isFinite(value) ? value : null, unit, ...(anchor ? { anchor } : {}) }
}

/** Writes the figures to `path` (the bench's `--json` file, read by jsonPathArg at its start), if there is one. */
export function writeFigures(path: string | undefined, bench: string, figures: readonly Figure[]): void {
  if (path === undefined) return
  const doc: FiguresFile = { bench, argv: process.argv.slice(2), load: loadavg(), figures }
  writeFileSync(path, JSON.stringify(doc, null, 2) + '\n')
}
