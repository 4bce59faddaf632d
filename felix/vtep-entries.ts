// Remote VTEPs on vxlan.pinto: one permanent neighbour (tunnel IP -> MAC) and one FDB entry (MAC -> node IP)
// each. The diff is pure; syncVtepEntries reads both tables and writes one `ip -batch` and one `bridge -batch`.
// The device is pinto's alone, so any unicast entry on it that is not desired is removed.

import type { FdbEntry, NeighbourEntry } from './render-routes.js'
import { parseJsonArray } from './ip-json.js'
import { runChecked, type ProcessRunner } from './runner.js'

interface NeighJson {
  dst?: string
  lladdr?: string
  state?: string[]
}

interface FdbJson {
  mac?: string
  dst?: string
  state?: string
}

/** `ip -batch` lines making the device's neighbours exactly `want`. */
export function diffNeighbours(dev: string, want: readonly NeighbourEntry[], actual: readonly NeighJson[]): string[] {
  const have = new Map<string, NeighJson>()
  for (const n of actual) if (n.dst !== undefined) have.set(n.dst, n)
  const lines: string[] = []
  const wanted = new Set<string>()
  for (const w of want) {
    wanted.add(w.address)
    const h = have.get(w.address)
    if (h?.lladdr?.toLowerCase() === w.mac && h.state?.includes('PERMANENT') === true) continue
    lines.push(`neigh replace ${w.address} lladdr ${w.mac} dev ${dev} nud permanent`)
  }
  for (const dst of have.keys()) if (!wanted.has(dst)) lines.push(`neigh del ${dst} dev ${dev}`)
  return lines
}

/** `bridge -batch` lines making the device's unicast FDB entries exactly `want`. */
export function diffFdb(dev: string, want: readonly FdbEntry[], actual: readonly FdbJson[]): string[] {
  const key = (mac: string, dst: string): string => `${mac.toLowerCase()} ${dst}`
  const have = new Set<string>()
  const lines: string[] = []
  for (const f of actual) {
    // Entries without a remote dst are the kernel's own (multicast, the device's MAC).
    if (f.mac === undefined || f.dst === undefined) continue
    have.add(key(f.mac, f.dst))
  }
  const wanted = new Set<string>()
  for (const w of want) {
    wanted.add(key(w.mac, w.dst))
    if (!have.has(key(w.mac, w.dst))) lines.push(`fdb replace ${w.mac} dev ${dev} dst ${w.dst} self permanent`)
  }
  for (const k of have) {
    if (wanted.has(k)) continue
    const [mac, dst] = k.split(' ')
    lines.push(`fdb del ${mac} dev ${dev} dst ${dst} self`)
  }
  return lines
}

export async function syncVtepEntries(
  ctx: { runner: ProcessRunner; netns?: string },
  dev: string,
  neighbours: readonly NeighbourEntry[],
  fdb: readonly FdbEntry[],
): Promise<{ neighbourLines: string[]; fdbLines: string[] }> {
  const ns = ctx.netns !== undefined ? { netns: ctx.netns } : {}
  const n = await runChecked(ctx.runner, 'ip', ['-json', 'neigh', 'show', 'dev', dev], ns)
  const f = await runChecked(ctx.runner, 'bridge', ['-json', 'fdb', 'show', 'dev', dev], ns)
  const neighbourLines = diffNeighbours(dev, neighbours.filter((e) => e.dev === dev), parseJsonArray<NeighJson>(n.stdout, 'ip neigh show'))
  const fdbLines = diffFdb(dev, fdb.filter((e) => e.dev === dev), parseJsonArray<FdbJson>(f.stdout, 'bridge fdb show'))
  // FDB first: a neighbour entry is only useful once frames for its MAC have somewhere to go.
  if (fdbLines.length > 0) await runChecked(ctx.runner, 'bridge', ['-batch', '-'], { input: fdbLines.join('\n') + '\n', ...ns })
  if (neighbourLines.length > 0) await runChecked(ctx.runner, 'ip', ['-batch', '-'], { input: neighbourLines.join('\n') + '\n', ...ns })
  return { neighbourLines, fdbLines }
}
