// The pod interfaces live on this host, as the kernel shows them: each link whose ifalias records an
// attachment (the CNI plugin writes its IPAM handle there) with the host routes (/32, /128) it carries, which
// are the addresses its pod uses. For `pintoctl ipam check`, which holds them against IPAM. Reads only.

import { type Runner, run as defaultRun } from '../cni/index.js'
import { readAliases } from '../cni/index.js'
import type { LiveAddress } from '../ipam/index.js'

interface IpRoute { dst?: string; dev?: string; gateway?: string }

/** A route's destination when it is one host's address (no gateway), else undefined. */
function hostRoute(r: IpRoute): string | undefined {
  if (r.dst === undefined || r.gateway !== undefined) return undefined
  const [addr, len] = r.dst.split('/')
  if (len === undefined) return addr === 'default' ? undefined : addr
  return len === (addr?.includes(':') ? '128' : '32') ? addr : undefined
}

/**
 * Every address a link with an ifalias routes to, with the handle that alias records. An alias without a
 * '.' is an earlier pinto's (the container ID alone, no handle): its addresses are listed with handle null.
 */
export async function liveAddresses(run: Runner = defaultRun): Promise<LiveAddress[]> {
  const aliases = await readAliases(run)
  const out: LiveAddress[] = []
  for (const args of [['-j', 'route', 'show'], ['-j', '-6', 'route', 'show']]) {
    const r = await run('ip', args)
    if (r.code !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`)
    for (const route of JSON.parse(r.stdout === '' ? '[]' : r.stdout) as IpRoute[]) {
      const alias = route.dev === undefined ? undefined : aliases.get(route.dev)
      const address = hostRoute(route)
      if (alias === undefined || address === undefined) continue
      out.push({ address, link: route.dev as string, handle: alias.includes('.') ? alias : null })
    }
  }
  return out
}
