// The routing tables of pinto's BGP speaker: RIBs, best path, export rules and Adj-RIB-Out batching.
// Pure; the sessions (bgp/session) feed it and drain it.

export * from './types.js'
export { Rib, type RibOptions, type OriginateOptions, type PeerCounts, type ReimportResult } from './rib.js'
export { ImportTable, reimportOp, type ReimportOp } from './import-table.js'
export { decide, neighbourAs, REASONS, STEPS, DEFAULT_LOCAL_PREF, type Decision, type DecisionContext, type Step } from './best-path.js'
export { mayExport, transform, type ExportContext, type OutRoute } from './export.js'
export { validateReceived, badNextHop, type LocalIdentity, type Verdict } from './validate.js'
export { LocRibDeltas, NextHopTable, DELTA_WITHDRAWN, DELTA_LOCAL, DELTA_NEW, DELTA_HAS_LOCAL_PREF } from './loc-rib-delta.js'
export type { RoundPacing } from './update-group.js'
