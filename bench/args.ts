// The benches' command-line options: `--name value`, or the fallback when absent.

export function numberArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name)
  if (i < 0) return fallback
  const v = Number(process.argv[i + 1])
  if (!Number.isFinite(v)) throw new Error(`${name}: expected a number, got ${JSON.stringify(process.argv[i + 1])}`)
  return v
}

/** A string option: `--name value`, undefined when absent. */
export function stringArg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  if (i < 0) return undefined
  const v = process.argv[i + 1]
  if (v === undefined || v.startsWith('--')) throw new Error(`${name}: expected a value`)
  return v
}

/** The arguments that are neither a `--name` option nor its value. */
export function positionalArgs(): string[] {
  const out: string[] = []
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i++) {
    if ((argv[i] as string).startsWith('--')) i++
    else out.push(argv[i] as string)
  }
  return out
}
