// A desired peer as the speaker's PeerConfig: its BGPFilters compiled into import and export policies
// (Calico's export allow-list after the operator's filters, the pool guard on a non-node peer's import)
// and its session settings. Compiled policies are kept by content, so a peer whose filters did not change
// keeps the same policy object and the speaker leaves its session and tables alone.

import { ACCEPT_ALL, compileBgpFilters, compilePoolGuard, formatPrefix, guardPoolPrefixes, type PeerConfig, type Policy } from '../../bgp/index.js'
import { deepEqual, type BGPFilter, type IPPool } from '../../config/index.js'
import { exportAllowList } from '../advertisements.js'
import type { DesiredPeer } from '../bgp-peers.js'
import type { ResolvedPassword } from '../bgp-secrets.js'
import type { AnnouncementRefusals } from '../refusals.js'

type FilterContent = Pick<BGPFilter, 'metadata' | 'spec'>

/** What a peer's configuration depends on beside the peer itself. */
export interface PeerInputs {
  readonly filters: ReadonlyMap<string, BGPFilter>
  readonly pools: readonly IPPool[]
  readonly services: readonly string[]
  /** This node's IPv6 address, the source of IPv6 next hops on IPv4 sessions. */
  readonly localAddress6: string | undefined
  /** PINTO_RESTART_TIME, for peers that set none. */
  readonly restartTime: number
}

interface Compiled {
  readonly key: unknown
  readonly policy: Policy
}

export class PeerPolicies {
  /** Compiled policies with the content they were compiled from (few: one per distinct filter list). */
  private readonly compiled: Compiled[] = []

  constructor(private readonly refusals: AnnouncementRefusals) {}

  /** `toNode`: the peer is a cluster node (may announce pool prefixes, gets disableBGPExport pools). Throws when a named BGPFilter does not exist. */
  configFor(p: DesiredPeer, inputs: PeerInputs, toNode: boolean, password: ResolvedPassword): PeerConfig {
    const named = p.filters.map((name) => {
      const f = inputs.filters.get(name)
      if (!f) throw new Error(`BGPFilter ${name} does not exist`)
      return f
    })
    // Calico appends its own export filter after the operator's: only pool and service routes leave the node.
    const exportPolicy = this.policy('export', [...named, exportAllowList(inputs.pools, inputs.services, toNode)])
    let importPolicy = named.length === 0 ? ACCEPT_ALL : this.policy('import', named)
    if (!toNode) importPolicy = this.guarded(importPolicy, inputs.pools, named)
    const v6 = p.family === 'ipv6'
    return {
      name: p.name,
      kind: p.kind,
      address: p.address,
      port: p.port,
      ...(p.localAddress !== undefined ? { localAddress: p.localAddress } : {}),
      ...(inputs.localAddress6 !== undefined ? { localAddress6: inputs.localAddress6 } : {}),
      peerAsn: p.peerAsn,
      localAsn: p.localAsn,
      passive: p.passive,
      families: v6 ? ['ipv6'] : ['ipv4'],
      rrClient: p.rrClient,
      nextHopMode: p.nextHopMode,
      allowLocalAs: p.allowLocalAs,
      restartTime: p.restartTime ?? inputs.restartTime,
      ...(p.keepaliveTime !== undefined ? { keepaliveTime: p.keepaliveTime, holdTime: p.keepaliveTime * 3 } : {}),
      importPolicy,
      exportPolicy,
      ...('error' in password ? { transportError: password.error } : password.password !== undefined ? { password: password.password } : {}),
      ...(p.ttlSecurity > 0 ? { ttlSecurity: p.ttlSecurity } : {}),
    }
  }

  private cached(key: unknown, compile: () => Policy): Policy {
    const hit = this.compiled.find((c) => deepEqual(c.key, key))
    if (hit !== undefined) return hit.policy
    const policy = compile()
    this.compiled.push({ key, policy })
    return policy
  }

  /**
   * A non-node peer's import policy behind the pool guard: prefixes inside a pool are refused unless one of
   * the peer's BGPFilters accepts them explicitly.
   */
  private guarded(inner: Policy, pools: readonly IPPool[], named: readonly FilterContent[]): Policy {
    const cidrs = pools.map((x) => x.spec.cidr).sort()
    const filters = named.map((f) => [f.metadata.name, f.spec])
    return this.cached({ guard: { cidrs, filters } }, () => {
      const guard = compilePoolGuard(cidrs, named)
      return guardPoolPrefixes(inner, guard, (prefix, peer) => this.refusals.poolPrefixRefused(peer.name, formatPrefix(prefix)))
    })
  }

  private policy(direction: 'import' | 'export', filters: readonly FilterContent[]): Policy {
    return this.cached({ [direction]: filters.map((f) => [f.metadata.name, f.spec]) }, () => compileBgpFilters(filters, direction))
  }
}
