// The routes bench/fib and bench/route-read program, and the namespace they go in: N distinct /32s through one gateway.

import { execa } from 'execa'

export const FIB_NEXT_HOP = '192.0.2.2'

/** N distinct /32s: inside the benchmarking range 198.18.0.0/15 up to 131072, else 10.64.0.0/10 (namespace-only). */
export function fibPrefixes(n: number): string[] {
  const base = n <= 131072 ? (198 << 24) | (18 << 16) : (10 << 24) | (64 << 16)
  const out = new Array<string>(n)
  for (let i = 0; i < n; i++) {
    const v = (base + i) >>> 0
    out[i] = `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}/32`
  }
  return out
}

/** Makes namespace `ns` with va (192.0.2.1/24) up and its peer vb up, so FIB_NEXT_HOP is a valid gateway. */
export async function makeFibNamespace(ns: string): Promise<void> {
  await execa('ip', ['netns', 'add', ns])
  const ip = (args: string[]) => execa('ip', ['-n', ns, ...args])
  await ip(['link', 'add', 'va', 'type', 'veth', 'peer', 'name', 'vb'])
  await ip(['addr', 'add', '192.0.2.1/24', 'dev', 'va'])
  await ip(['link', 'set', 'va', 'up'])
  await ip(['link', 'set', 'vb', 'up'])
  await ip(['link', 'set', 'lo', 'up'])
}

