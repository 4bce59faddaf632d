// What every controller of pinto-node is handed by the composition root (node.ts): the settings, a
// logger, the datastore and the cluster state that follows it, this node's addresses (detected once at
// start) and when the agent started. Read-only; each controller keeps its own state and timers.

import type { Logger } from 'pino'
import { effectiveBGPConfiguration } from '../../config/index.js'
import type { DetectedAddress } from '../autodetect.js'
import type { ClusterState } from '../cluster-state.js'
import type { MonitoredDatastore } from '../datastore-health.js'
import type { AgentSettings } from '../settings.js'

export interface NodeAddresses {
  readonly v4: DetectedAddress | undefined
  readonly v6: DetectedAddress | undefined
}

export interface AgentContext {
  readonly settings: AgentSettings
  readonly log: Logger
  readonly store: MonitoredDatastore
  readonly cluster: ClusterState
  readonly addresses: NodeAddresses
  /** ms since the epoch. */
  readonly startedAt: number
}

/** This node's BGPConfiguration: `default` with `node.<name>` over it. */
export function bgpConfig(ctx: Pick<AgentContext, 'cluster' | 'settings'>): ReturnType<typeof effectiveBGPConfiguration> {
  return effectiveBGPConfiguration(ctx.cluster.get('BGPConfiguration', 'default'), ctx.cluster.get('BGPConfiguration', `node.${ctx.settings.nodeName}`))
}

/** "addr/len" of a detected address. */
export function cidrOf(a: DetectedAddress): string {
  return `${a.address}/${a.prefixLength}`
}

/**
 * Whether the wait for the peers' tables is over: every peer has sent its table (End-of-RIB), or the
 * sync deadline since start has passed. `waitedMs` for the log.
 */
export function tablesWait(ctx: AgentContext, tablesIn: boolean): { readonly done: boolean; readonly waitedMs: number } {
  const waitedMs = Date.now() - ctx.startedAt
  return { done: tablesIn || waitedMs >= ctx.settings.syncDeadlineSeconds * 1000, waitedMs }
}

/** Runs `job` now and after every change of the cluster's resources (not of IPAM blocks); returns the unsubscribe. */
export function followResources(ctx: Pick<AgentContext, 'cluster'>, job: { trigger(): void }): () => void {
  const off = ctx.cluster.onChange((topic) => {
    if (topic === 'resources') job.trigger()
  })
  job.trigger()
  return off
}
