// Reading the JSON that `ip` and `bridge` print with -json: one tolerant parse (an empty table prints
// nothing) with errors naming the command. Pure; what the objects mean is up to each caller.

export function parseJsonArray<T>(text: string, what: string): T[] {
  let v: unknown
  try {
    v = JSON.parse(text.trim() === '' ? '[]' : text)
  } catch (err) {
    throw new Error(`${what}: printed invalid JSON: ${(err as Error).message}`)
  }
  if (!Array.isArray(v)) throw new Error(`${what}: expected a JSON array`)
  return v as T[]
}
