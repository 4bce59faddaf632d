// Calico's defaults, applied on demand: resources are stored and printed as the operator wrote them,
// and readers call withDefaults() (or the effective-config helpers) to see the values in force.
// Pure: returns new objects, never mutates its argument.

import { parseIfAddr } from '../../net/index.js'
import { parsePeerIP } from './scalars.js'
import type { BGPConfiguration, BGPConfigurationSpec, BGPPeer, IPAMConfig, IPPool, Resource } from './types.js'
import { API_VERSION } from './types.js'

export const DEFAULT_AS_NUMBER = 64512
export const DEFAULT_BGP_PORT = 179
export const DEFAULT_BLOCK_SIZE_V4 = 26
export const DEFAULT_BLOCK_SIZE_V6 = 122
/** What maxBlocksPerHost 0 (or absent) means. */
export const DEFAULT_MAX_BLOCKS_PER_HOST = 20

const GLOBAL_BGP_DEFAULTS: Required<Pick<BGPConfigurationSpec, 'logSeverityScreen' | 'nodeToNodeMeshEnabled' | 'asNumber' | 'listenPort' | 'bindMode'>> = {
  logSeverityScreen: 'Info',
  nodeToNodeMeshEnabled: true,
  asNumber: DEFAULT_AS_NUMBER,
  listenPort: DEFAULT_BGP_PORT,
  bindMode: 'None',
}

/**
 * The resource with Calico's defaults filled in. A per-node BGPConfiguration (`node.<name>`) is
 * returned unchanged: its absent fields inherit from `default`, see effectiveBGPConfiguration().
 */
export function withDefaults<R extends Resource>(resource: R): R {
  const r = structuredClone(resource) as Resource
  switch (r.kind) {
    case 'BGPConfiguration':
      if (r.metadata.name === 'default') r.spec = fill(r.spec, GLOBAL_BGP_DEFAULTS)
      break
    case 'BGPPeer':
      r.spec = fill(r.spec, { sourceAddress: 'UseNodeIP', reversePeering: 'Auto' })
      break
    case 'IPPool': {
      // The family decides the default; a CIDR that does not parse is validation's to report.
      const v6 = (() => {
        try {
          return parseIfAddr(r.spec.cidr, 'spec.cidr', { bare: true }).addr.family === 6
        } catch {
          return false
        }
      })()
      r.spec = fill(r.spec, {
        blockSize: v6 ? DEFAULT_BLOCK_SIZE_V6 : DEFAULT_BLOCK_SIZE_V4,
        ipipMode: 'Never',
        vxlanMode: 'Never',
        natOutgoing: false,
        disabled: false,
        disableBGPExport: false,
        nodeSelector: 'all()',
        allowedUses: ['Workload', 'Tunnel'],
        assignmentMode: 'Automatic',
      })
      // Calico writes blockSize 0 for "default"; treat it the same.
      if (r.spec.blockSize === 0) r.spec.blockSize = v6 ? DEFAULT_BLOCK_SIZE_V6 : DEFAULT_BLOCK_SIZE_V4
      break
    }
    case 'IPAMConfig':
      r.spec = fill(r.spec, { strictAffinity: false, autoAllocateBlocks: true })
      if ((r.spec.maxBlocksPerHost ?? 0) === 0) r.spec.maxBlocksPerHost = DEFAULT_MAX_BLOCKS_PER_HOST
      break
    case 'BGPFilter':
    case 'Node':
      break
    default: {
      const never: never = r
      throw new Error(`unknown kind ${JSON.stringify(never)}`)
    }
  }
  return r as R
}

/** The written fields first (so printed YAML keeps the operator's order), then the defaults missing from them. */
function fill<S extends object>(spec: S, defaults: Partial<S>): S {
  const out: Record<string, unknown> = { ...(spec as Record<string, unknown>) }
  for (const [k, v] of Object.entries(defaults)) if (out[k] === undefined) out[k] = v
  return out as S
}

/** The BGP settings in force on one node: Calico's defaults, then `default`, then `node.<name>`. */
export function effectiveBGPConfiguration(global?: BGPConfiguration, perNode?: BGPConfiguration): BGPConfigurationSpec {
  return { ...GLOBAL_BGP_DEFAULTS, ...global?.spec, ...perNode?.spec }
}

/** The IPAM settings in force when no IPAMConfig exists (Calico's GetIPAMConfig does the same). */
export function defaultIPAMConfig(): IPAMConfig {
  return withDefaults({ apiVersion: API_VERSION, kind: 'IPAMConfig', metadata: { name: 'default' }, spec: {} })
}

/**
 * The address and port to dial for a BGPPeer with peerIP: the port in peerIP, else the listenPort
 * given (the peer's BGPConfiguration), else 179. Undefined for selector peers.
 */
export function peerEndpoint(peer: BGPPeer, listenPort = DEFAULT_BGP_PORT): { ip: string; port: number } | undefined {
  if (peer.spec.peerIP === undefined) return undefined
  const p = parsePeerIP(peer.spec.peerIP)
  if (typeof p === 'string') return undefined
  return { ip: p.ipText, port: p.port ?? listenPort }
}

/** Convenience for the IPAM: a pool's block size with the default applied. */
export function poolBlockSize(pool: IPPool): number {
  return withDefaults(pool).spec.blockSize ?? DEFAULT_BLOCK_SIZE_V4
}
