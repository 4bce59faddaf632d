// pinto-node's settings from the environment, as calico-node takes them. Pure: a bad value throws a
// SettingsError whose message is one line naming the variable and what was wrong.

import { hostname } from 'node:os'
import { DEFAULT_DATASTORE, parseDatastoreSpec, checkEtcdTlsFiles, DatastoreSettingError, etcdTlsFilesFromEnv, type EtcdTlsFiles, parseASNumber } from '../config/index.js'
import { AddrError, formatAddr, parseAddr, parseCidr, parseIfAddr, tryAddr } from '../net/index.js'
import { DEFAULT_MTU_FILE, DEFAULT_SOCKET } from '../cni/index.js'
import { parseListen } from './api/listen.js'
import { type KubeSource, kubeSourceOf } from '../config/index.js'

/** pino's levels, as PINTO_LOG_LEVEL takes them. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const

export class SettingsError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`)
    this.name = 'SettingsError'
  }
}

/** How the node's address is found (Calico's IP / IP_AUTODETECTION_METHOD in one variable). */
export type AddressMethod =
  | { readonly kind: 'none' }
  | { readonly kind: 'first-found' }
  | { readonly kind: 'interface'; readonly pattern: RegExp }
  | { readonly kind: 'can-reach'; readonly destination: string }
  | { readonly kind: 'explicit'; readonly address: string; readonly prefixLength: number }

export type FanoutSetting =
  | { readonly addresses: readonly string[] }
  | { readonly service: { readonly namespace: string; readonly name: string } }

export type EncapSetting = 'Never' | 'Always' | 'CrossSubnet'

export interface AgentSettings {
  readonly nodeName: string
  readonly ip: AddressMethod
  readonly ip6: AddressMethod
  /** The node's AS; undefined: the cluster's (BGPConfiguration, default 64512). */
  readonly asNumber: number | undefined
  readonly datastore: string
  /** PINTO_ETCD_CA_CERT_FILE / _CERT_FILE / _KEY_FILE, for an https:// datastore; read once when it is opened. */
  readonly etcdTls: EtcdTlsFiles
  /** How long a deleted Node keeps its IPAM and BGP sessions, in case it comes back; 0 releases at once. */
  readonly nodeGcGraceSeconds: number
  readonly apiListen: { readonly host: string; readonly port: number }
  readonly apiToken: string | undefined
  readonly socket: string
  /** The REST API's own unix socket: changes (admin actions) are allowed there. */
  readonly apiSocket: string
  readonly dataplane: 'kernel' | 'none'
  /** How felix writes routes: its rtnetlink socket (falling back to `ip` where it cannot), or `ip -batch` only. */
  readonly routeWriter: 'netlink' | 'ip'
  readonly logLevel: (typeof LOG_LEVELS)[number]
  readonly bgpPort: number
  /** BFD Control packets are received here (RFC 5881: 3784). */
  readonly bfdPort: number
  readonly ipv4Pool: { readonly cidr: string; readonly blockSize: number; readonly ipip: EncapSetting; readonly vxlan: EncapSetting; readonly natOutgoing: boolean } | undefined
  readonly ipv6Pool: { readonly cidr: string; readonly blockSize: number } | undefined
  readonly mtuFile: string
  /** felix's kernel route protocol number. */
  readonly routeProtocol: number
  readonly resyncSeconds: number
  /** Seconds after start during which every peer must be up for /readyz (Calico: 5 minutes is too long for a demo). */
  readonly readyWindowSeconds: number
  /** Seconds our routes are kept by peers while we restart (graceful restart). */
  readonly restartTime: number
  /** Where the agent remembers its last clean run, to announce a restart (RFC 4724 R bit). */
  readonly stateDir: string
  /** Longest wait for the peers' End-of-RIB before the kernel is programmed at start. */
  readonly syncDeadlineSeconds: number
  /**
   * PINTO_IPAM_CLAIM_AHEAD: claim the node's next IPAM block when its blocks have fewer free addresses than this;
   * 0 claims only when an ADD finds no room (as Calico does); unset: a quarter of a block.
   */
  readonly ipamClaimAhead: number | undefined
  /** How often the agent checks and repairs its own node's IPAM records; 0 turns it off. */
  readonly ipamRepairSeconds: number
  /** How long a problem must stay unchanged (over two checks) before the agent repairs it. */
  readonly ipamRepairGraceSeconds: number
  /** Where secretKeyRef {name, key} is read, as `<dir>/<name>/<key>` (a mounted Secret volume). */
  readonly secretsDir: string
  /**
   * Kubernetes credentials for reading pods in etcd mode (KUBECONFIG, else the in-cluster ServiceAccount); none:
   * pods' annotations and the pod GC are off, and this node's Kubernetes Node labels are not synced onto its Node.
   * The kubernetes datastore brings its own.
   */
  readonly kube: KubeSource | undefined
  /** PINTO_POD_GC_GRACE_SECONDS: how long a pod is gone from the API before its addresses are freed; 0 turns pod GC off. */
  readonly podGcGraceSeconds: number
  /**
   * The fan-out (pinto-fanout) the agent follows the cluster through: its replicas' addresses, or the Kubernetes
   * Service whose ready endpoints they are; undefined: the datastore itself.
   */
  readonly fanout: FanoutSetting | undefined
  /** PINTO_FANOUT_TOKEN_FILE: the bearer token the fan-out wants, read once at start. */
  readonly fanoutTokenFile: string | undefined
}

type Env = Readonly<Record<string, string | undefined>>

/**
 * A deleted Node's grace: Kubernetes' own patience with a node that went away (pods tolerate an unreachable or
 * not-ready node for 300 s before they are evicted), so a Node deleted and registered again within it (a kubelet
 * re-registering, a machine replaced under its name) keeps its pods' addresses, well inside Calico's 15-minute
 * leakGracePeriod after which operators expect leaked addresses back.
 */
export const DEFAULT_NODE_GC_GRACE_SECONDS = 300

function text(env: Env, name: string, fallback: string): string {
  const v = env[name]
  if (v === undefined || v === '') return fallback
  if (v.trim() !== v) throw new SettingsError(name, `${JSON.stringify(v)} has surrounding spaces`)
  return v
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = env[name]
  if (v === undefined || v === '') return fallback
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new SettingsError(name, `${JSON.stringify(v)} is not a whole number from ${min} to ${max}`)
  return Number(v)
}

export function choice<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const v = env[name]
  if (v === undefined || v === '') return fallback
  const hit = allowed.find((a) => a.toLowerCase() === v.toLowerCase())
  if (hit === undefined) throw new SettingsError(name, `${JSON.stringify(v)} is not one of ${allowed.join(', ')}`)
  return hit
}

export function parseAddressMethod(name: string, value: string | undefined, v6: boolean): AddressMethod {
  if (value === undefined || value === '') return v6 ? { kind: 'none' } : { kind: 'first-found' }
  const v = value.trim()
  if (v === 'none') return { kind: 'none' }
  if (v === 'autodetect' || v === 'first-found') return { kind: 'first-found' }
  if (v.startsWith('interface=')) {
    const source = v.slice('interface='.length)
    try {
      return { kind: 'interface', pattern: new RegExp(`^(?:${source})$`) }
    } catch (err) {
      throw new SettingsError(name, `interface=${source}: not a regular expression (${(err as Error).message})`)
    }
  }
  if (v.startsWith('can-reach=')) {
    const dest = v.slice('can-reach='.length)
    const a = tryAddr(() => parseAddr(dest, name, { family: v6 ? 6 : 4 }))
    if (a instanceof AddrError) throw new SettingsError(name, `can-reach: ${a.reason}`)
    return { kind: 'can-reach', destination: formatAddr(a.family, a.value) }
  }
  if (v.includes('/')) {
    const a = tryAddr(() => parseIfAddr(v, name, { family: v6 ? 6 : 4 }))
    if (a instanceof AddrError) throw new SettingsError(name, `${a.reason} (expected <address>/<prefix length>)`)
    return { kind: 'explicit', address: formatAddr(a.addr.family, a.addr.value), prefixLength: a.cidr.prefix }
  }
  throw new SettingsError(name, `${JSON.stringify(v)}: expected autodetect, first-found, none, interface=<regex>, can-reach=<addr> or <addr>/<len>`)
}

export function hostPort(name: string, value: string): { host: string; port: number } {
  try {
    return parseListen(value)
  } catch (err) {
    throw new SettingsError(name, (err as Error).message)
  }
}

function cidr(name: string, value: string, v6: boolean): string {
  const c = tryAddr(() => parseCidr(value, name, { family: v6 ? 6 : 4 }))
  if (c instanceof AddrError) throw new SettingsError(name, c.reason)
  return value
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/

/** PINTO_FANOUT_ADDRESSES (host:port[,host:port]) or PINTO_FANOUT_SERVICE (namespace/name), not both. */
function fanoutSetting(env: Env, kube: KubeSource | undefined): FanoutSetting | undefined {
  const addresses = env.PINTO_FANOUT_ADDRESSES ?? ''
  const service = env.PINTO_FANOUT_SERVICE ?? ''
  if (addresses !== '' && service !== '') throw new SettingsError('PINTO_FANOUT_SERVICE', 'set it or PINTO_FANOUT_ADDRESSES, not both')
  if (addresses !== '') {
    return {
      addresses: addresses.split(',').map((a, i) => {
        try {
          const { host, port } = parseListen(a.trim())
          if (port === 0) throw new Error('port 0')
          return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`
        } catch (err) {
          throw new SettingsError('PINTO_FANOUT_ADDRESSES', `address ${i + 1} (${JSON.stringify(a)}): expected host:port with a port 1-65535 (${(err as Error).message})`)
        }
      }),
    }
  }
  if (service === '') return undefined
  const [namespace, name, ...rest] = service.split('/')
  if (rest.length > 0 || namespace === undefined || name === undefined || !DNS_LABEL.test(namespace) || !DNS_LABEL.test(name)) {
    throw new SettingsError('PINTO_FANOUT_SERVICE', `${JSON.stringify(service)}: expected namespace/name of a Service, e.g. kube-system/pinto-fanout`)
  }
  if (kube === undefined && env.PINTO_DATASTORE !== 'kubernetes') throw new SettingsError('PINTO_FANOUT_SERVICE', 'a Service is found through the Kubernetes API: set KUBECONFIG or run in a pod, or give PINTO_FANOUT_ADDRESSES')
  return { service: { namespace, name } }
}

export function settingsFromEnv(env: Env): AgentSettings {
  const nodeName = text(env, 'PINTO_NODENAME', hostname())
  if (/[/\s]/.test(nodeName) || nodeName.length > 253) throw new SettingsError('PINTO_NODENAME', `${JSON.stringify(nodeName)}: a node name has no '/' or spaces and at most 253 characters`)
  let asNumber: number | undefined
  const asText = env.PINTO_AS
  if (asText !== undefined && asText !== '') {
    const parsed = parseASNumber(asText)
    if (typeof parsed === 'string') throw new SettingsError('PINTO_AS', parsed)
    asNumber = parsed
  }
  const datastore = text(env, 'PINTO_DATASTORE', DEFAULT_DATASTORE)
  let spec
  try {
    spec = parseDatastoreSpec(datastore)
  } catch (err) {
    throw new SettingsError('PINTO_DATASTORE', (err as Error).message.replace(/^PINTO_DATASTORE=?/, '').trim())
  }
  let etcdTls: EtcdTlsFiles
  try {
    etcdTls = etcdTlsFilesFromEnv(env)
    checkEtcdTlsFiles(spec, etcdTls)
  } catch (err) {
    if (err instanceof DatastoreSettingError) throw new SettingsError(err.variable, err.detail)
    throw err
  }
  let kube: KubeSource | undefined
  try {
    kube = kubeSourceOf(env)
  } catch (err) {
    throw new SettingsError('KUBECONFIG', (err as Error).message.replace(/^KUBECONFIG=/, ''))
  }
  const poolCidr = text(env, 'PINTO_IPV4POOL_CIDR', '192.168.0.0/16')
  const noPool = poolCidr === 'none'
  const pool6 = text(env, 'PINTO_IPV6POOL_CIDR', '')
  const encap: readonly EncapSetting[] = ['Never', 'Always', 'CrossSubnet']
  const ipip = choice(env, 'PINTO_IPV4POOL_IPIP', 'Never', encap)
  const vxlan = choice(env, 'PINTO_IPV4POOL_VXLAN', 'Never', encap)
  if (ipip !== 'Never' && vxlan !== 'Never') throw new SettingsError('PINTO_IPV4POOL_VXLAN', 'IPIP and VXLAN cannot both be on for one pool')
  return {
    nodeName,
    ip: parseAddressMethod('PINTO_IP', env.PINTO_IP, false),
    ip6: parseAddressMethod('PINTO_IP6', env.PINTO_IP6, true),
    asNumber,
    datastore,
    etcdTls,
    nodeGcGraceSeconds: integer(env, 'PINTO_NODE_GC_GRACE_SECONDS', DEFAULT_NODE_GC_GRACE_SECONDS, 0, 7 * 86400),
    apiListen: hostPort('PINTO_API_LISTEN', text(env, 'PINTO_API_LISTEN', '127.0.0.1:9099')),
    apiToken: env.PINTO_API_TOKEN === undefined || env.PINTO_API_TOKEN === '' ? undefined : env.PINTO_API_TOKEN,
    socket: text(env, 'PINTO_SOCKET', DEFAULT_SOCKET),
    apiSocket: text(env, 'PINTO_API_SOCKET', '/var/run/pinto/api.sock'),
    dataplane: choice(env, 'PINTO_DATAPLANE', 'kernel', ['kernel', 'none'] as const),
    routeWriter: choice(env, 'PINTO_ROUTE_WRITER', 'netlink', ['netlink', 'ip'] as const),
    logLevel: choice(env, 'PINTO_LOG_LEVEL', 'info', LOG_LEVELS),
    bgpPort: integer(env, 'PINTO_BGP_PORT', 179, 1, 65535),
    bfdPort: integer(env, 'PINTO_BFD_PORT', 3784, 1, 65535),
    ipv4Pool: noPool
      ? undefined
      : {
          cidr: cidr('PINTO_IPV4POOL_CIDR', poolCidr, false),
          blockSize: integer(env, 'PINTO_IPV4POOL_BLOCK_SIZE', 26, 20, 32),
          ipip,
          vxlan,
          natOutgoing: choice(env, 'PINTO_IPV4POOL_NAT_OUTGOING', 'true', ['true', 'false'] as const) === 'true',
        },
    ipv6Pool: pool6 === '' ? undefined : { cidr: cidr('PINTO_IPV6POOL_CIDR', pool6, true), blockSize: integer(env, 'PINTO_IPV6POOL_BLOCK_SIZE', 122, 116, 128) },
    mtuFile: text(env, 'PINTO_MTU_FILE', DEFAULT_MTU_FILE),
    routeProtocol: integer(env, 'PINTO_ROUTE_PROTOCOL', 87, 1, 255),
    resyncSeconds: integer(env, 'PINTO_RESYNC_SECONDS', 90, 1, 86400),
    readyWindowSeconds: integer(env, 'PINTO_READY_WINDOW_SECONDS', 60, 0, 86400),
    restartTime: integer(env, 'PINTO_RESTART_TIME', 120, 1, 4095),
    stateDir: text(env, 'PINTO_STATE_DIR', '/var/lib/pinto'),
    syncDeadlineSeconds: integer(env, 'PINTO_SYNC_DEADLINE_SECONDS', 10, 0, 600),
    ipamRepairSeconds: integer(env, 'PINTO_IPAM_REPAIR_SECONDS', 60, 0, 86400),
    ipamClaimAhead: env.PINTO_IPAM_CLAIM_AHEAD === undefined || env.PINTO_IPAM_CLAIM_AHEAD === '' ? undefined : integer(env, 'PINTO_IPAM_CLAIM_AHEAD', 0, 0, 65536),
    ipamRepairGraceSeconds: integer(env, 'PINTO_IPAM_REPAIR_GRACE_SECONDS', 120, 1, 86400),
    secretsDir: text(env, 'PINTO_SECRETS_DIR', '/etc/pinto/secrets'),
    kube,
    podGcGraceSeconds: integer(env, 'PINTO_POD_GC_GRACE_SECONDS', 900, 0, 86400 * 7),
    fanout: fanoutSetting(env, kube),
    fanoutTokenFile: env.PINTO_FANOUT_TOKEN_FILE === undefined || env.PINTO_FANOUT_TOKEN_FILE === '' ? undefined : env.PINTO_FANOUT_TOKEN_FILE,
  }
}
