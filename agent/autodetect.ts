// Finding the node's own address, as calico-node does: the first usable global address, the first on
// an interface matching a pattern, the source the kernel uses to reach a destination, or an explicit
// one. Reads `ip -json` through the felix process runner; the choice and its reason are returned.

import { globMatcher } from '../bgp/index.js'
import type { ProcessRunner } from '../felix/index.js'
import type { AddressMethod } from './settings.js'
import type { Family } from '../net/index.js'

export interface DetectedAddress {
  readonly address: string
  readonly prefixLength: number
  readonly interface: string | undefined
  /** Why this address, for the log. */
  readonly reason: string
}

interface AddrJson {
  ifname?: string
  flags?: string[]
  addr_info?: { family?: string; local?: string; prefixlen?: number; scope?: string }[]
}

/** Interfaces calico-node skips in first-found: container and tunnel devices. */
const SKIPPED = /^(docker|cbr|dummy|virbr|lxcbr|veth|lo$|cali|tunl|flannel|kube-ipvs|cni|vxlan|pinto|tap|vmnet|nodelocaldns)/

async function addresses(runner: ProcessRunner, family: Family): Promise<AddrJson[]> {
  const r = await runner.run('ip', [`-${family}`, '-json', 'addr', 'show'], {})
  if (r.exitCode !== 0) throw new Error(`ip -${family} -json addr show: ${r.stderr.trim()}`)
  return JSON.parse(r.stdout || '[]') as AddrJson[]
}

function usable(a: { local?: string; scope?: string }): boolean {
  return a.local !== undefined && a.scope === 'global'
}

/** BGPConfiguration ignoredInterfaces: BIRD interface patterns, as Calico hands them to BIRD. */
function ignoredBy(globs: readonly string[]): (name: string) => boolean {
  const matchers = globs.map(globMatcher)
  return (name) => matchers.some((m) => m(name))
}

/** `ignored`: interface globs (BGPConfiguration ignoredInterfaces) first-found and interface never pick. */
export async function detectAddress(runner: ProcessRunner, method: AddressMethod, family: Family, ignored: readonly string[] = []): Promise<DetectedAddress | undefined> {
  const isIgnored = ignoredBy(ignored)
  switch (method.kind) {
    case 'none':
      return undefined
    case 'explicit': {
      const links = await addresses(runner, family)
      const owner = links.find((l) => l.addr_info?.some((a) => a.local === method.address))
      return {
        address: method.address,
        prefixLength: method.prefixLength,
        interface: owner?.ifname,
        reason: `set explicitly${owner ? ` (on ${owner.ifname})` : ' (not on any interface here)'}`,
      }
    }
    case 'first-found':
    case 'interface': {
      for (const link of await addresses(runner, family)) {
        const name = link.ifname ?? ''
        if (!(link.flags ?? []).includes('UP') || isIgnored(name)) continue
        if (method.kind === 'interface' ? !method.pattern.test(name) : SKIPPED.test(name)) continue
        const a = link.addr_info?.find(usable)
        if (a?.local !== undefined) {
          return {
            address: a.local,
            prefixLength: a.prefixlen ?? (family === 4 ? 32 : 128),
            interface: name,
            reason: method.kind === 'interface' ? `first address on an interface matching ${method.pattern.source}` : `first global address on an up interface (${name})`,
          }
        }
      }
      return undefined
    }
    case 'can-reach': {
      const r = await runner.run('ip', [`-${family}`, '-json', 'route', 'get', method.destination], {})
      if (r.exitCode !== 0) throw new Error(`ip route get ${method.destination}: ${r.stderr.trim()}`)
      const route = (JSON.parse(r.stdout || '[]') as { prefsrc?: string; dev?: string }[])[0]
      if (route?.prefsrc === undefined) return undefined
      const link = (await addresses(runner, family)).find((l) => l.ifname === route.dev)
      const info = link?.addr_info?.find((a) => a.local === route.prefsrc)
      return {
        address: route.prefsrc,
        prefixLength: info?.prefixlen ?? (family === 4 ? 32 : 128),
        interface: route.dev,
        reason: `the source address the kernel uses to reach ${method.destination}`,
      }
    }
    default: {
      const never: never = method
      return never
    }
  }
}
