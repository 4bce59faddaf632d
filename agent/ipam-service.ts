// The agent's IPAM service for the CNI plugins, on a unix socket (ipam-service-http.ts), backed by ipam/'s
// Ipam. It validates requests and serialises mutations; allocation logic stays in ipam/.
// It must not wire anything, and it opens no datastore itself (the caller hands one in). What a crash or an
// unreachable datastore leaves of an assign or a release is recovery's (agent/recovery/): each is recorded
// there before its work, and replayed when the service starts.

import { readFile } from 'node:fs/promises'
import { type Datastore, withRequestDeadline } from '../config/index.js'
import { blockCidr, ordinalAddress } from '../ipam/index.js'
import { type AutoAssignRequest, Ipam, IpamError } from '../ipam/index.js'
import type { AutoAssignResult, ReleaseResult } from '../ipam/index.js'
import { BLOCKS_PREFIX, IpamRecordError, decodeBlock } from '../ipam/index.js'
import { cachedInputs, loadPoolSpecs, readInputs } from './ipam-service-pools.js'
import type { ClusterState } from './cluster-state.js'
import { ClaimAhead } from './ipam-claim-ahead.js'
import { MutationQueue } from './ipam-mutations.js'
import { PodRecovery } from './recovery/index.js'
import { RequestError, field, isCount, isString, isStringList, isStringMap } from './ipam-service-requests.js'
import { IpamHttp } from './ipam-service-http.js'

export { errorReply } from './ipam-service-requests.js'
export { DEFAULT_MTU_FILE } from '../cni/index.js'
import { DEFAULT_MTU_FILE } from '../cni/index.js'

/**
 * An assign's requests to an apiserver are waited for until this long after it came (withRequestDeadline): within
 * the plugins' 30 s wait for the answer, leaving the wiring its time. A loaded apiserver then delays a pod instead
 * of failing its sandbox, which the kubelet would make again only after its backoff.
 */
export const ASSIGN_DEADLINE_MS = 20_000

export interface IpamServiceOptions {
  readonly store: Datastore
  readonly node: string
  readonly socket: string
  /**
   * The agent's watched view of the resources: an ADD takes its Node, IPAMConfig and pools from it (no read)
   * and its transaction checks their revisions, so a stale view fails it and they are read again. Without
   * it every ADD reads them.
   */
  readonly cluster?: ClusterState
  /** Where felix writes the pod MTU; reported in /v1/status so operators see what the plugins will use. */
  readonly mtuFile?: string
  /** The agent's state dir (PINTO_STATE_DIR): where the recovery journal is kept across restarts. */
  readonly stateDir?: string
  /**
   * Claim the node's next block when its blocks have fewer free addresses than this (agent/ipam-claim-ahead.ts);
   * 0: never, claiming inline as Calico does; undefined: a quarter of a block.
   */
  readonly claimAheadBelow?: number | undefined
  /** Called when a release that had failed goes through: the datastore is back. */
  readonly onDatastoreBack?: () => void
  /**
   * Whether a live wiring on this node holds `handle`; by default, whether a link of this netns records its
   * attachment in its ifalias (cni/wiring-plan.ts aliasNames).
   */
  readonly held?: (handle: string) => Promise<boolean>
  /**
   * The pod's side of each request (agent/pod-ipam.ts): the assignment its pod's annotations ask for (read before
   * the request queues; undefined: an ordinary one), and word of each assign answered and each release by handle.
   */
  readonly pods?: {
    plan(req: AutoAssignRequest): Promise<((ipam: Ipam) => Promise<AutoAssignResult>) | undefined>
    assigned(req: AutoAssignRequest, result: AutoAssignResult): void
    released(handle: string): void
  }
  readonly log?: (msg: string, fields: Record<string, unknown>) => void
}

/** ADDs and DELs the CNI channel answered (done, failed, handed back to the plugin), and how its `ip` processes started. */
export interface CniChannelStatus {
  readonly done: number
  readonly failed: number
  readonly handedBack: number
  readonly ipStartedAhead: number
  readonly ipSpawnedOnDemand: number
}

export class IpamService {
  readonly ipam: Ipam
  /** The socket the plugins ask. */
  private readonly http: IpamHttp
  /**
   * Mutations run one at a time (the next once this one's write is applied): one agent per node, so this only
   * removes CAS storms between its own requests.
   */
  private readonly mutations = new MutationQueue()
  /** Handles with a request queued or running, which the node's repair must leave alone. */
  private readonly busyHandles = new Map<string, number>()
  /** The journal of assigns and releases, and their replay (durable with a state dir). */
  readonly recovery: PodRecovery
  /** The node's next block, claimed before an ADD needs it. */
  readonly ahead: ClaimAhead

  constructor(private readonly options: IpamServiceOptions) {
    const { store, cluster } = options
    this.ipam = new Ipam(this.mutations.store(store), {
      pools: () => loadPoolSpecs(store),
      inputs: { read: async (node, fresh) => (fresh || cluster === undefined || !cluster.current ? readInputs(store, node) : cachedInputs(cluster, node)) },
    })
    this.ahead = new ClaimAhead({ ipam: this.ipam, node: options.node, below: options.claimAheadBelow, log: options.log })
    this.recovery = new PodRecovery({
      stateDir: options.stateDir,
      socket: options.socket,
      held: options.held,
      // A new ADD of the same handle took it over meanwhile: its addresses are not ours to free. A release made
      // here is a DEL's, late: the pod's podIP annotations are cleared as the DEL's would be.
      release: (handle) => this.serial(async () => {
        if (!this.recovery.releaseWanted(handle)) return
        await this.ipam.releaseByHandle(handle)
        this.options.pods?.released(handle)
      }),
      onDatastoreBack: options.onDatastoreBack,
      log: options.log,
    })
    this.http = new IpamHttp(options.socket, this)
  }

  /** Whether a request for `handle` is queued or running now. */
  busy(handle: string): boolean {
    return this.busyHandles.has(handle)
  }

  /**
   * Reads what the first ADD would otherwise read cold: the node's blocks, decoded (so it is one transaction;
   * the ADD takes its pools from the ADD's inputs, not from here); then checks whether a block is due to be
   * claimed ahead. A failure is logged, not thrown: the ADDs then read for themselves.
   */
  async prepare(): Promise<void> {
    try {
      const blocks = await this.ipam.warm(this.options.node)
      this.options.log?.('IPAM blocks of this node read before the first ADD', { blocks })
      this.ahead.note(([4, 6] as const).filter((f) => this.ipam.headroom(this.options.node, f) !== undefined))
    } catch (err) {
      this.options.log?.('reading this node\'s IPAM blocks at start failed; the first ADD reads them', { err: (err as Error).message })
    }
  }

  /**
   * Replays what the last run left unfinished (agent/recovery/), then listens on the socket (replacing a
   * stale one), mode 0600; ADDs wait for prepare(), which starts now.
   */
  async listen(): Promise<void> {
    void this.serial(() => this.prepare())
    await this.recovery.start()
    await this.http.listen()
  }

  /**
   * Stops taking requests and answers those taken (for up to `drainMs`: IpamHttp.close), then stops the
   * releases' retries once the work queued is done.
   */
  async close(drainMs = 5000): Promise<void> {
    await this.http.close(drainMs)
    await this.recovery.stopRetrying()
    await this.mutations.drained()
    this.recovery.shut()
    await this.ahead.settled()
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.mutations.run(fn)
  }

  /** What the CNI channel beside this service reports in /v1/status (set by whoever starts the channel). */
  channelStatus: (() => CniChannelStatus) | undefined

  async status(): Promise<{ ready: boolean; node: string; pools: string[]; mtu: number | null; reason?: string; cniChannel?: CniChannelStatus }> {
    const pools = (await loadPoolSpecs(this.options.store)).filter((p) => p.disabled !== true).map((p) => p.cidr)
    const mtuText = await readFile(this.options.mtuFile ?? DEFAULT_MTU_FILE, 'utf8').catch(() => '')
    const mtu = /^\d+\s*$/.test(mtuText) ? Number(mtuText) : null
    const channel = this.channelStatus?.()
    return {
      ready: pools.length > 0, node: this.options.node, pools, mtu,
      ...(pools.length === 0 ? { reason: 'no enabled IPPool' } : {}),
      ...(channel !== undefined ? { cniChannel: channel } : {}),
    }
  }

  /** POST /v1/assign's work, for callers in this process too (the CNI channel): errors as errorReply maps them. */
  assign(body: Record<string, unknown>): Promise<{ node: string } & AutoAssignResult> {
    return withRequestDeadline(Date.now() + ASSIGN_DEADLINE_MS, () => this.assignNow(body))
  }

  private async assignNow(body: Record<string, unknown>): Promise<{ node: string } & AutoAssignResult> {
    let req: AutoAssignRequest = {
      handle: field(body, 'handle', isString, 'a handle id'),
      node: field(body, 'node', isString, 'a node name', this.options.node),
      num4: field(body, 'num4', isCount, 'an integer 0..256', 0),
      num6: field(body, 'num6', isCount, 'an integer 0..256', 0),
      attrs: field(body, 'attrs', isStringMap, 'an object of strings', {}),
      ...(body['pools'] !== undefined && Array.isArray(body['pools']) && (body['pools'] as unknown[]).length !== 0 ? { pools: field(body, 'pools', isStringList, 'a list of pool names or CIDRs') } : {}),
    }
    // Calico's GC reads the node from the allocation's attributes.
    req = { ...req, attrs: { ...req.attrs, node: req.node } }
    if ((req.num4 ?? 0) + (req.num6 ?? 0) === 0) throw new RequestError(400, 'invalid', 'num4, num6: nothing requested')
    const handle = req.handle
    const planned = await this.options.pods?.plan(req)
    // Without transactions an assign is several round trips, of which only the block writes need the queue.
    const alone = planned === undefined && !this.options.store.transactions
    return this.serialFor(handle, alone, async () => {
      this.recovery.takenOver(handle)
      try {
        const r = planned !== undefined ? await planned(this.ipam) : await this.ipam.autoAssign(req, alone ? (fn) => this.serial(fn) : undefined)
        if (req.node === this.options.node) this.ahead.note([...(r.ipv4.length > 0 ? [4 as const] : []), ...(r.ipv6.length > 0 ? [6 as const] : [])])
        this.options.pods?.assigned(req, r)
        return { node: req.node, ipv4: r.ipv4, ipv6: r.ipv6 }
      } catch (err) {
        // Whatever the failure, a write may have landed: the ADD answers failure, so its handle goes.
        if (!(err instanceof IpamError && err.code === 'invalid') && !(err instanceof IpamRecordError)) this.recovery.releaseLater(handle, 'add-failed')
        throw err
      }
    })
  }

  /**
   * serial() after the handle's earlier requests, with `handle` counted busy from queueing to the end; with
   * `queuesItself`, `fn` is not queued as a whole (it queues its block writes).
   */
  private async serialFor<T>(handle: string, queuesItself: boolean, fn: () => Promise<T>): Promise<T> {
    this.busyHandles.set(handle, (this.busyHandles.get(handle) ?? 0) + 1)
    try {
      return await (queuesItself ? this.mutations.afterHandle(handle, fn) : this.mutations.runFor(handle, fn))
    } finally {
      const n = (this.busyHandles.get(handle) ?? 1) - 1
      if (n === 0) this.busyHandles.delete(handle)
      else this.busyHandles.set(handle, n)
    }
  }

  /** POST /v1/release's work, for callers in this process too. */
  release(body: Record<string, unknown>): Promise<ReleaseResult> {
    if (body['handle'] !== undefined) {
      const handle = field(body, 'handle', isString, 'a handle id')
      return this.serialFor(handle, false, async () => {
        // Recorded before the datastore write: a DEL cut short there is made at the next start.
        this.recovery.releasing(handle)
        try {
          const r = await this.ipam.releaseByHandle(handle)
          this.recovery.released(handle)
          this.options.pods?.released(handle)
          return r
        } catch (err) {
          // Records pinto cannot read are not retried (the operator's to repair); anything else is.
          if (err instanceof IpamRecordError) this.recovery.released(handle)
          else this.recovery.releaseLater(handle, 'del')
          throw err
        }
      })
    }
    const addrs = field(body, 'addresses', isStringList, 'a list of addresses')
    return this.serial(() => this.ipam.releaseIPs(addrs.map((address) => ({ address }))))
  }

  /** Every allocation whose handle starts with `prefix` (all when empty), with its attributes, for CNI GC. */
  async allocations(prefix: string): Promise<{ handle: string; address: string; attrs: Readonly<Record<string, string>> }[]> {
    const { items } = await this.options.store.list(BLOCKS_PREFIX)
    const out: { handle: string; address: string; attrs: Readonly<Record<string, string>> }[] = []
    for (const kv of items) {
      const b = decodeBlock(kv.key, kv.value)
      const cidr = blockCidr(b)
      b.allocations.forEach((idx, ord) => {
        const attr = idx === null ? undefined : b.attributes[idx]
        if (attr?.handleId && attr.handleId.startsWith(prefix)) out.push({ handle: attr.handleId, address: ordinalAddress(cidr, ord), attrs: attr.secondary })
      })
    }
    return out
  }
}
