// The resource model's public face (projectcalico.org/v3 kinds): import from here, not from the files.
// Stable names for the IPAM, agent and pintoctl:
//   parseResources(text, source?) -> Resource[]   YAML/JSON, many documents, Lists; throws ResourceErrors
//   tryParseResources(text, source?)              same, returning { resources, errors } instead of throwing
//   withDefaults(resource)                        Calico's defaults filled in (stored resources stay as written)
//   effectiveBGPConfiguration(global, perNode), defaultIPAMConfig(), peerEndpoint(peer, listenPort), poolBlockSize(pool)
//   checkPoolOverlap(pool, existingPools) -> ResourceError[]
//   nodeAddressNames(nodes) -> Map               each node's BGP address (no length) to its name
//   resourceKey(kind, name), resourceKindPrefix(kind), parseResourceKey(key), encodeResource(r), decodeResource(value, key?, kind?)
//   resolveKind(cliText)                          `ippools` / `bgppeer` / ... -> kind
//   parseSelector(text).matches(labels)           Calico selectors (re-exported from ../selector.js)
//   parseDuration(text) -> ms                     Go durations (re-exported from ../duration.js)
// Types: Resource (union over `kind`), IPPool, IPAMConfig, BGPPeer, BGPConfiguration, BGPFilter, Node, their specs.

export * from './types.js'
export { ResourceError, ResourceErrors, formatPath, type PathSegment } from './errors.js'
export { parseResources, tryParseResources, type ParseResult } from './parse.js'
export {
  withDefaults,
  effectiveBGPConfiguration,
  defaultIPAMConfig,
  peerEndpoint,
  poolBlockSize,
  DEFAULT_AS_NUMBER,
  DEFAULT_BGP_PORT,
  DEFAULT_BLOCK_SIZE_V4,
  DEFAULT_BLOCK_SIZE_V6,
  DEFAULT_MAX_BLOCKS_PER_HOST,
} from './defaults.js'
export { checkPoolOverlap } from './pools.js'
export { nodeAddressNames } from './nodes.js'
export { BLOCK_SIZE_RANGE, DEFAULT_ONLY_BGP_FIELDS } from './validate.js'
export {
  RESOURCE_KEY_PREFIX,
  resourceKey,
  resourceKindPrefix,
  parseResourceKey,
  keyOf,
  encodeResource,
  decodeResource,
  resolveKind,
} from './store-keys.js'
export { parseASNumber, parsePeerIP, MAX_AS_NUMBER, type PeerAddress } from './scalars.js'
export { parseSelector, evaluate, SelectorError, type Selector, type SelectorNode, type Labels } from '../selector.js'
export { parseDuration, formatDuration, DurationError } from '../duration.js'
export { deepEqual } from './equal.js'
