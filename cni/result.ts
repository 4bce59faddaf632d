// CNI results: the 1.1.0 shape pinto builds, reading any version a delegated or previous plugin printed,
// and converting to the version the runtime asked for. Pure.

import { CniError, ERR, compareVersions } from './spec.js'

export interface CniInterface {
  readonly name: string
  readonly mac?: string
  readonly mtu?: number
  readonly sandbox?: string
}

export interface CniIp {
  /** ADDRESS/LENGTH. */
  readonly address: string
  readonly gateway?: string
  readonly interface?: number
}

export interface CniRoute {
  readonly dst: string
  readonly gw?: string
}

export interface CniResult {
  readonly cniVersion: string
  readonly interfaces?: readonly CniInterface[]
  readonly ips?: readonly CniIp[]
  readonly routes?: readonly CniRoute[]
  readonly dns?: Readonly<Record<string, unknown>>
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function str(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '') throw new CniError(ERR.decode, `${field}: expected a non-empty string, got ${JSON.stringify(v)}`)
  return v
}

function optStr(v: unknown, field: string): string | undefined {
  return v === undefined || v === null || v === '' ? undefined : str(v, field)
}

/** Reads a result of any supported version (0.3.0 onward) into the current shape; errors name the field. */
export function parseResult(raw: unknown, field = 'prevResult'): CniResult {
  if (!isObject(raw)) throw new CniError(ERR.decode, `${field}: expected an object`)
  const list = (name: string): unknown[] => {
    const v = raw[name]
    if (v === undefined || v === null) return []
    if (!Array.isArray(v)) throw new CniError(ERR.decode, `${field}.${name}: expected an array`)
    return v
  }
  const interfaces = list('interfaces').map((it, i): CniInterface => {
    const f = `${field}.interfaces[${i}]`
    if (!isObject(it)) throw new CniError(ERR.decode, `${f}: expected an object`)
    const mac = optStr(it['mac'], `${f}.mac`)
    const sandbox = optStr(it['sandbox'], `${f}.sandbox`)
    const mtu = typeof it['mtu'] === 'number' ? it['mtu'] : undefined
    return { name: str(it['name'], `${f}.name`), ...(mac ? { mac } : {}), ...(mtu ? { mtu } : {}), ...(sandbox ? { sandbox } : {}) }
  })
  const ips = list('ips').map((it, i): CniIp => {
    const f = `${field}.ips[${i}]`
    if (!isObject(it)) throw new CniError(ERR.decode, `${f}: expected an object`)
    const address = str(it['address'], `${f}.address`)
    if (!address.includes('/')) throw new CniError(ERR.decode, `${f}.address: ${JSON.stringify(address)} is not ADDRESS/LENGTH`)
    const gateway = optStr(it['gateway'], `${f}.gateway`)
    const iface = it['interface']
    if (iface !== undefined && (typeof iface !== 'number' || !Number.isInteger(iface) || iface < 0)) {
      throw new CniError(ERR.decode, `${f}.interface: expected an index, got ${JSON.stringify(iface)}`)
    }
    return { address, ...(gateway ? { gateway } : {}), ...(iface !== undefined ? { interface: iface } : {}) }
  })
  const routes = list('routes').map((it, i): CniRoute => {
    const f = `${field}.routes[${i}]`
    if (!isObject(it)) throw new CniError(ERR.decode, `${f}: expected an object`)
    const gw = optStr(it['gw'], `${f}.gw`)
    return { dst: str(it['dst'], `${f}.dst`), ...(gw ? { gw } : {}) }
  })
  const dns = isObject(raw['dns']) ? raw['dns'] : undefined
  return { cniVersion: typeof raw['cniVersion'] === 'string' ? raw['cniVersion'] : '1.1.0', interfaces, ips, routes, ...(dns ? { dns } : {}) }
}

/**
 * The result as JSON for `version`: 0.3.x/0.4.0 carry `version` per IP; interface `mtu` appeared in 1.1.0.
 * Versions before 0.3.0 are refused earlier (checkVersion), so no 0.2.0 shape is needed.
 */
export function convertResult(r: CniResult, version: string): Record<string, unknown> {
  const legacy = compareVersions(version, '1.0.0') < 0
  const withMtu = compareVersions(version, '1.1.0') >= 0
  return {
    cniVersion: version,
    interfaces: (r.interfaces ?? []).map((i) => {
      const { mtu, ...rest } = i
      return withMtu && mtu !== undefined ? { ...rest, mtu } : rest
    }),
    ips: (r.ips ?? []).map((ip) => (legacy ? { version: ip.address.includes(':') ? '6' : '4', ...ip } : ip)),
    routes: r.routes ?? [],
    dns: r.dns ?? {},
  }
}
