// Route policy for pinto's BGP speaker: Calico BGPFilter rules compiled into the RIB's Policy.

export { compileBgpFilters, ACCEPT_ALL, type Direction } from './bgp-filter.js'
export {
  prefixMatcher,
  parseCommunity,
  hasCommunity,
  addCommunity,
  startsWithAsns,
  prependAsns,
  globMatcher,
  priorityOf,
  kernelMetricOf,
  priorityToLocalPref,
  PRIORITY_BASE,
  DEFAULT_PRIORITY,
  type Community,
  type MatchOperator,
} from './match.js'
