// The benches' numeric command-line options: `--name value`, or the fallback when absent.

export function numberArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name)
  if (i < 0) return fallback
  const v = Number(process.argv[i + 1])
  if (!Number.isFinite(v)) throw new Error(`${name}: expected a number, got ${JSON.stringify(process.argv[i + 1])}`)
  return v
}
