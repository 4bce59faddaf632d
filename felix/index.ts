// felix's public face: the feed of learned routes from the speaker's Loc-RIB deltas, the dataplane the
// agent drives, and beneath them the desired state's rendering, the route reconciler, devices, NAT and
// VTEP entries. Import from here, not from the files. Nothing here starts on import.

export * from './desired-state.js'
export { renderDesired, workloadAddresses, localBlockRoutes, TUNL_DEVICE, VXLAN_DEVICE, type RenderOptions, type RenderedState, type RenderProblem, type NeighbourEntry, type FdbEntry } from './render-routes.js'
export { RenderContext } from './render-context.js'
export { DEFAULT_ROUTE_PROTOCOL, MAIN_TABLE, routeKey, type KernelRoute, type NextHop } from './kernel-route.js'
export { RouteDeltaTracker, type RouteOp, type DiffResult, type RouteConflict } from './route-diff.js'
export { RouteReconciler, type RouteReconcilerOptions, type ApplyResult, type RouteError } from './route-reconciler.js'
export { ExecaRunner, RecordingRunner, CommandError, type ProcessRunner, type RunResult, type RunOptions } from './runner.js'
export * from './devices.js'
export { syncVtepEntries } from './vtep-entries.js'
export { renderNatRuleset, applyNat, NAT_TABLE } from './nat.js'
export { DesiredTable, type DesiredRoutes, type HopSource, type OwnRoutes } from './desired-table.js'
export { LearnedRoutes } from './learned-routes.js'
export { preferAffineNodes, type AffinityConflict, type NextHop as LearnedHop, type OwnerResolution } from './block-owners.js'
export { LearnedFeed, type LocRibSource, type ProgramRules } from './learned-feed.js'
export { Dataplane, remoteVteps, type DataplaneInputs } from './dataplane.js'
export { RouteSocket } from './route-socket.js'
export { NetnsRtnl, LinkOpRefused } from './netns-rtnl.js'
export { LinkWriter, linkOpText, type LinkOp } from './rtnl-links.js'
