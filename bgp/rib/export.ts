// What one peer is sent for one best path: the per-peer export rules of RFC 4271 §9.2 and §5.1
// (split horizon, AS_PATH prepend, LOCAL_PREF and MED toward other ASes, next hop self/keep/auto),
// RFC 4456 §6-8 route reflection, RFC 8212 and the export policy. Pure; the caller caches results.

import { familyKey } from '../codec/constants.js'
import { prependAsns } from '../policy/match.js'
import { attributesKey } from '../codec/intern.js'
import type { MutablePathAttributes, PathAttributes } from '../codec/attributes.js'
import type { Path, RibPeer, RouteContext } from './types.js'
import type { EncodedAttributes } from '../codec/pack.js'

export interface ExportContext {
  /** Set when this speaker reflects routes. */
  readonly clusterId: string | undefined
  readonly rfc8212: boolean
  /** LOCAL_PREF given to paths that have none when they go to an iBGP peer (RFC 4271 §5.1.5). */
  readonly defaultLocalPref: number
}

/** Attributes ready for packUpdates, and the key that groups equal ones into one UPDATE. */
export interface OutRoute {
  readonly attributes: PathAttributes
  /** MP_REACH next hop(s); empty for IPv4 unicast, whose next hop is the NEXT_HOP attribute. */
  readonly nextHop: readonly string[]
  readonly key: string
  /** Filled by packUpdates the first time the attributes are encoded (this result never changes). */
  readonly encoded: EncodedAttributes
}

const UNICAST = 1

/**
 * The checks that need neither policy nor attributes: family, never back to the source, iBGP split
 * horizon and reflection (RFC 4456 §6), RFC 8212 for export.
 */
export function mayExport(path: Path, target: RibPeer, ctx: ExportContext): boolean {
  return mayExportFrom(path.prefix.afi, path.peer, target, ctx)
}

/** mayExport for a path of this family from `src` (undefined: our own), without a Path object. */
export function mayExportFrom(afi: number, src: RibPeer | undefined, target: RibPeer, ctx: ExportContext): boolean {
  if (!target.families.has(familyKey(afi, UNICAST))) return false
  if (target.type === 'ebgp' && ctx.rfc8212 && (target.exportPolicy === undefined || target.exportPolicy.empty)) return false
  if (src === undefined) return true
  if (src.id === target.id) return false
  if (src.type === 'ibgp' && target.type === 'ibgp') {
    if (ctx.clusterId === undefined) return false
    // From a client: to everyone. From a non-client: to clients only.
    return src.rrClient || target.rrClient
  }
  return true
}

function isLinkLocal(a: string): boolean {
  return /^fe[89ab]/i.test(a)
}

/**
 * The attributes `target` receives for `path` (whose Loc-RIB attributes, after export policy, are
 * `attrs`), or undefined when no usable next hop exists for it.
 */
export function transform(path: Path, attrs: PathAttributes, target: RibPeer, ctx: ExportContext): OutRoute | undefined {
  const out: MutablePathAttributes = { ...attrs }
  const src = path.peer
  const local = src === undefined
  out.origin ??= 0
  out.asPath ??= []
  if (target.type === 'ebgp') {
    out.asPath = prependAsns(out, [target.localAsn]).asPath
    delete out.localPref
    // RFC 4271 §5.1.4: a MED learned from elsewhere is not passed on to another AS.
    if (!local) delete out.med
    delete out.originatorId
    delete out.clusterList
  } else {
    // RFC 4271 §5.1.5: LOCAL_PREF is always present inside the AS.
    out.localPref ??= ctx.defaultLocalPref
    if (src !== undefined && src.type === 'ibgp') {
      // Reflecting (mayExport let an iBGP path through to an iBGP peer): RFC 4456 §8.
      out.originatorId ??= path.session?.routerId
      out.clusterList = [ctx.clusterId!, ...(attrs.clusterList ?? [])]
    } else {
      delete out.originatorId
      delete out.clusterList
    }
  }
  // Next hop: Calico's nextHopMode; BIRD's auto is self toward eBGP and keep inside the AS, and a
  // route we originate has no next hop but us.
  const self = local || target.nextHopMode === 'self' || (target.nextHopMode === 'auto' && target.type === 'ebgp')
  const v4 = path.prefix.afi === 1
  let hop: string | undefined
  if (!self) {
    hop = path.attrs.nextHop.length > 0 ? path.attrs.nextHop[0] : attrs.nextHop
    // A link-local address only works on the link it came from; fall back to ourselves.
    if (hop !== undefined && isLinkLocal(hop)) hop = undefined
  }
  if (hop === undefined) hop = v4 ? target.localAddress : target.localAddress6 ?? (target.localAddress.includes(':') ? target.localAddress : undefined)
  if (hop === undefined || hop === '') return undefined
  let nextHop: readonly string[]
  if (v4 && !hop.includes(':')) {
    out.nextHop = hop
    nextHop = []
  } else {
    delete out.nextHop
    nextHop = [hop]
  }
  return { attributes: out, nextHop, key: attributesKey(out, nextHop), encoded: {} }
}

/** The policy context of a path: learned from a peer, or ours (with the interface it names). */
export function routeContext(path: Path, iface: string | undefined): RouteContext {
  return routeContextOf(path.peer, iface)
}

/** routeContext for a path from `src` (undefined: ours), without a Path object. */
export function routeContextOf(src: RibPeer | undefined, iface: string | undefined): RouteContext {
  if (src !== undefined) return FROM_PEER
  return iface === undefined ? LOCAL : { fromPeer: false, interface: iface }
}
const FROM_PEER: RouteContext = { fromPeer: true }
const LOCAL: RouteContext = { fromPeer: false }
