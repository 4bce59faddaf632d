// pinto's version, as package.json (beside dist/) states it: what `--version` of every program prints.

import { readFile } from 'node:fs/promises'

export async function version(): Promise<string> {
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }
  return pkg.version ?? 'unknown'
}
