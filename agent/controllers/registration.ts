// This node's own records: its addresses (detected once at start), the Node resource with what only the
// agent knows (operators' fields kept, written again when the Node is deleted and comes back), the default pools
// when there are none, the tunnel addresses from IPAM, and the restart marker whose age tells the next run it
// restarts within the graceful-restart window. On the kubernetes datastore the Node is the kubelet's: it waits
// for it and never creates one.

import { createHash } from 'node:crypto'
import { mkdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { DatastoreError, decodeResource, type KubeHttp, deepEqual, encodeResource, resourceKey, type IPPool, type Node } from '../../config/index.js'
import type { ProcessRunner } from '../../felix/index.js'
import type { Ipam } from '../../ipam/index.js'
import { detectAddress } from '../autodetect.js'
import type { AgentSettings } from '../settings.js'
import { Coalescer } from './coalescer.js'
import { bgpConfig, cidrOf, type AgentContext, type NodeAddresses } from './context.js'

/** How often the wait for the kubelet's Node says it is still waiting. */
const NODE_WAIT_REMINDER_MS = 30_000

/** A stable, locally administered unicast MAC for the node's VTEP. */
export function vtepMac(nodeName: string): string {
  const h = createHash('sha256').update(`pinto-vtep:${nodeName}`).digest()
  h[0] = (h[0]! & 0xfe) | 0x02
  return [...h.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join(':')
}

/** The node's addresses by PINTO_IP and PINTO_IP6; BGPConfiguration ignoredInterfaces never give one. */
export async function detectNodeAddresses(runner: ProcessRunner, ctx: Pick<AgentContext, 'settings' | 'cluster' | 'log'>): Promise<NodeAddresses> {
  const s = ctx.settings
  const ignored = bgpConfig(ctx).ignoredInterfaces ?? []
  const v4 = await detectAddress(runner, s.ip, 4, ignored)
  const v6 = await detectAddress(runner, s.ip6, 6, ignored)
  if (v4 === undefined && v6 === undefined) throw new Error(`PINTO_IP: no address found for this node (${s.ip.kind})`)
  if (v4) ctx.log.info({ address: cidrOf(v4), interface: v4.interface }, `node IPv4 address: ${v4.reason}`)
  if (v6) ctx.log.info({ address: cidrOf(v6), interface: v6.interface }, `node IPv6 address: ${v6.reason}`)
  return { v4, v6 }
}

/** This node's own tunnel endpoints, when a pool asks for encapsulation. */
export interface Tunnels {
  readonly vxlan?: { readonly address: string; readonly mac: string }
  readonly ipipAddress?: string
}

export class Registration {
  private readonly log: Logger
  private readonly settings: AgentSettings
  private heartbeat: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined
  /** Whether the cluster view holds our Node, as last seen. */
  private present = true
  private readonly again: Coalescer
  /** The Node names its Kubernetes Node in an orchRef (off the kubernetes datastore, once that Node is seen). */
  private kubeTied = false
  tunnels: Tunnels = {}

  constructor(private readonly ctx: AgentContext) {
    this.log = ctx.log
    this.settings = ctx.settings
    this.again = new Coalescer(() => this.registerAgain(), (err) => this.log.error({ err: err.message }, 'registering the Node again failed'))
  }

  /**
   * The kubernetes datastore's Node is the core v1 Node the kubelet registers (PINTO_NODENAME must be its name):
   * resolves once the cluster view holds it, saying that and for which name it waits meanwhile.
   */
  async awaitKubernetesNode(): Promise<void> {
    const { cluster } = this.ctx
    const name = this.settings.nodeName
    if (cluster.get('Node', name) !== undefined) return
    const t0 = Date.now()
    const waiting = `waiting for the Kubernetes Node ${JSON.stringify(name)}: the kubelet registers it, pinto-node does not create one (PINTO_NODENAME must be the kubelet's node name)`
    this.log.warn({ node: name }, waiting)
    await new Promise<void>((resolve) => {
      const reminder = setInterval(() => this.log.warn({ node: name, waitedSeconds: Math.round((Date.now() - t0) / 1000) }, waiting), NODE_WAIT_REMINDER_MS)
      const off = cluster.onChange((topic) => {
        if (topic !== 'resources' || cluster.get('Node', name) === undefined) return
        off()
        clearInterval(reminder)
        resolve()
      })
    })
    this.log.info({ node: name, waitedSeconds: Math.round((Date.now() - t0) / 1000) }, `the Kubernetes Node ${JSON.stringify(name)} is registered`)
  }

  /**
   * Off the kubernetes datastore, with the Kubernetes API at hand: whether this node's Kubernetes Node exists, so
   * that register() ties the Node to it with Calico's orchRef (and the Node is deleted when it is: kube-nodes.ts).
   * Not found: the Node is not tied, said once. The API not answering: an orchRef already there stays.
   */
  async tieToKubernetes(http: KubeHttp): Promise<void> {
    const name = this.settings.nodeName
    try {
      const r = await http.request('GET', `/api/v1/nodes/${encodeURIComponent(name)}`, { resourceVersion: '0' })
      if (r.status === 200) this.kubeTied = true
      else if (r.status === 404) this.log.warn({ node: name }, `there is no Kubernetes Node ${JSON.stringify(name)} (PINTO_NODENAME must be the kubelet's node name): the Node is not tied to one, and is not deleted with it`)
      else this.log.warn({ node: name, status: r.status }, `reading the Kubernetes Node ${JSON.stringify(name)} failed: the Node keeps the orchRef it has`)
    } catch (err) {
      this.log.warn({ node: name, err: (err as Error).message }, `the Kubernetes API does not answer: the Node keeps the orchRef it has`)
    }
  }

  /** The default pools (only when the cluster has none) and our Node resource. */
  async register(): Promise<void> {
    await this.ensureDefaultPools()
    const { v4, v6 } = this.ctx.addresses
    await this.updateNode((node) => {
      const bgp = { ...(node.spec.bgp ?? {}) }
      if (v4) bgp.ipv4Address = cidrOf(v4)
      else delete bgp.ipv4Address
      if (v6) bgp.ipv6Address = cidrOf(v6)
      else delete bgp.ipv6Address
      if (this.settings.asNumber !== undefined) bgp.asNumber = this.settings.asNumber
      node.spec.bgp = bgp
      node.spec.addresses = [...(v4 ? [{ address: cidrOf(v4), type: 'CalicoNodeIP' as const }] : []), ...(v6 ? [{ address: cidrOf(v6), type: 'CalicoNodeIP' as const }] : [])]
      if (this.kubeTied && !(node.spec.orchRefs ?? []).some((r) => r.orchestrator === 'k8s' && r.nodeName === node.metadata.name)) {
        node.spec.orchRefs = [...(node.spec.orchRefs ?? []).filter((r) => r.orchestrator !== 'k8s'), { nodeName: node.metadata.name, orchestrator: 'k8s' }]
      }
    })
    this.log.info({ node: this.settings.nodeName }, 'Node registered')
  }

  /** Seconds to announce a restart for: we ran recently and did not stop for good. */
  async restartWindow(): Promise<number> {
    const st = await stat(this.markerPath()).catch(() => undefined)
    if (!st) return 0
    const age = (Date.now() - st.mtimeMs) / 1000
    return age < this.settings.restartTime ? this.settings.restartTime : 0
  }

  /** Keeps the restart marker fresh while the agent runs, and registers again a Node that was deleted and came back. */
  async start(): Promise<void> {
    await this.beat()
    this.heartbeat = setInterval(() => void this.beat(), 10_000)
    this.heartbeat.unref()
    const { cluster } = this.ctx
    const name = this.settings.nodeName
    this.present = cluster.get('Node', name) !== undefined
    this.unsubscribe = cluster.onChange((topic) => {
      if (topic !== 'resources') return
      const present = cluster.get('Node', name) !== undefined
      if (present === this.present) return
      this.present = present
      if (!present) {
        this.log.warn({ node: name }, `this node's Node ${JSON.stringify(name)} was deleted: the other nodes release its IPAM and drop its sessions after the grace period (PINTO_NODE_GC_GRACE_SECONDS) unless it comes back`)
        return
      }
      this.log.info({ node: name }, `this node's Node ${JSON.stringify(name)} is back: registering it again`)
      this.again.trigger()
    })
  }

  /** The marker stays: a stop is a restart until the marker ages past the restart time. */
  async stop(): Promise<void> {
    clearInterval(this.heartbeat)
    this.unsubscribe?.()
    await this.again.idle()
  }

  /** Our fields on a Node that came back without them (a kubelet's Node is registered bare). */
  private async registerAgain(): Promise<void> {
    await this.register()
    await this.publishTunnels()
  }

  private async ensureDefaultPools(): Promise<void> {
    if (this.ctx.cluster.list('IPPool').length > 0) return
    const pools: IPPool[] = []
    const p4 = this.settings.ipv4Pool
    if (p4) {
      pools.push({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: { name: 'default-ipv4-ippool' },
        spec: { cidr: p4.cidr, blockSize: p4.blockSize, ipipMode: p4.ipip, vxlanMode: p4.vxlan, natOutgoing: p4.natOutgoing, nodeSelector: 'all()' },
      })
    }
    const p6 = this.settings.ipv6Pool
    if (p6) pools.push({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'default-ipv6-ippool' }, spec: { cidr: p6.cidr, blockSize: p6.blockSize, nodeSelector: 'all()' } })
    for (const pool of pools) {
      try {
        await this.ctx.store.create(resourceKey('IPPool', pool.metadata.name), encodeResource(pool))
        this.log.info({ pool: pool.metadata.name, cidr: pool.spec.cidr }, 'created the default IP pool')
      } catch (err) {
        if (!(err instanceof DatastoreError && err.code === 'exists')) throw err
      }
    }
  }

  /** Creates or updates our Node resource with what only we know; what operators set is kept. */
  private async updateNode(edit: (node: Node) => void): Promise<void> {
    const key = resourceKey('Node', this.settings.nodeName)
    const store = this.ctx.store
    for (let attempt = 0; attempt < 10; attempt++) {
      const kv = await store.get(key)
      const fresh = (): Node => (kv ? decodeResource(kv.value, key, 'Node') : { apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: this.settings.nodeName }, spec: {} })
      const node = fresh()
      edit(node)
      if (kv && deepEqual(node, fresh())) return
      try {
        if (kv) await store.update(key, encodeResource(node), kv.revision)
        else await store.create(key, encodeResource(node))
        return
      } catch (err) {
        if (err instanceof DatastoreError && (err.code === 'conflict' || err.code === 'exists')) continue
        throw err
      }
    }
    throw new Error(`Node ${this.settings.nodeName}: gave up updating after 10 conflicting writes`)
  }

  /** Tunnel addresses from the pool, by handle, as Calico's allocateip does; published on the Node. */
  async ensureTunnelAddresses(ipam: Ipam): Promise<void> {
    const pools = this.ctx.cluster.list('IPPool').filter((p) => !p.spec.disabled && !p.spec.cidr.includes(':'))
    const vxlanPool = pools.find((p) => (p.spec.vxlanMode ?? 'Never') !== 'Never')
    const ipipPool = pools.find((p) => (p.spec.ipipMode ?? 'Never') !== 'Never')
    const node = this.settings.nodeName
    const assign = async (handle: string, pool: IPPool, type: string): Promise<string | undefined> => {
      const r = await ipam.autoAssign({ handle, node, num4: 1, attrs: { node, type }, pools: [pool.metadata.name], use: 'Tunnel' })
      return r.ipv4[0]?.address
    }
    if (vxlanPool) {
      const address = await assign(`vxlan-tunnel-addr-${node}`, vxlanPool, 'vxlanTunnelAddress')
      if (address) {
        const mac = vtepMac(node)
        this.tunnels = { ...this.tunnels, vxlan: { address, mac } }
        this.log.info({ address, mac }, 'VXLAN tunnel endpoint')
      }
    }
    if (ipipPool) {
      const address = await assign(`ipip-tunnel-addr-${node}`, ipipPool, 'ipipTunnelAddress')
      if (address) {
        this.tunnels = { ...this.tunnels, ipipAddress: address }
        this.log.info({ address }, 'IPIP tunnel address')
      }
    }
    await this.publishTunnels()
  }

  /** The tunnel endpoints on our Node. */
  private async publishTunnels(): Promise<void> {
    const { vxlan, ipipAddress } = this.tunnels
    if (vxlan === undefined && ipipAddress === undefined) return
    await this.updateNode((n) => {
      if (vxlan !== undefined) {
        n.spec.ipv4VXLANTunnelAddr = vxlan.address
        n.spec.vxlanTunnelMACAddr = vxlan.mac
      }
      if (ipipAddress !== undefined) n.spec.bgp = { ...(n.spec.bgp ?? {}), ipv4IPIPTunnelAddr: ipipAddress }
    })
  }

  private markerPath(): string {
    return join(this.settings.stateDir, `${this.settings.nodeName}.alive`)
  }

  private async beat(): Promise<void> {
    await mkdir(this.settings.stateDir, { recursive: true })
    await writeFile(this.markerPath(), String(Date.now())).catch(() => undefined)
  }
}
