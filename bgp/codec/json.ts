// A JSON view of decoded messages for operators (`pintoctl bgp decode`), logs and the REST API:
// prefixes and addresses as text, bytes as hex, communities in their usual notations.

import { capabilityName, type Capability } from './capabilities.js'
import type { AsPathSegment, PathAttributes } from './attributes.js'
import { notificationText } from './errors.js'
import type { BgpMessage } from './message.js'
import { formatPrefix, type Prefix } from './nlri.js'

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')

export function formatCommunity(c: number): string {
  return `${c >>> 16}:${c & 0xffff}`
}

/** RFC 4360 / 5668 route target and origin as "rt:AS:N" / "ro:AS:N"; anything else as hex. */
export function formatExtCommunity(h: string): string {
  const type = parseInt(h.slice(0, 2), 16)
  const sub = parseInt(h.slice(2, 4), 16)
  const name = sub === 2 ? 'rt' : sub === 3 ? 'ro' : undefined
  if (name === undefined) return h
  if (type === 0x00) return `${name}:${parseInt(h.slice(4, 8), 16)}:${parseInt(h.slice(8, 16), 16)}`
  if (type === 0x02) return `${name}:${parseInt(h.slice(4, 12), 16)}:${parseInt(h.slice(12, 16), 16)}`
  if (type === 0x01) {
    const ip = [4, 6, 8, 10].map((i) => parseInt(h.slice(i, i + 2), 16)).join('.')
    return `${name}:${ip}:${parseInt(h.slice(12, 16), 16)}`
  }
  return h
}

const SEGMENT_NAMES = ['', 'set', 'sequence', 'confed-sequence', 'confed-set'] as const

function segments(path: readonly AsPathSegment[]): unknown[] {
  return path.map((s) => ({ type: SEGMENT_NAMES[s.type], asns: s.asns }))
}

function prefixes(list: readonly Prefix[], withPathId: boolean): unknown[] {
  return list.map((p) => (withPathId || p.pathId !== 0 ? { prefix: formatPrefix(p), pathId: p.pathId } : formatPrefix(p)))
}

export function attributesToJson(a: PathAttributes): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (a.origin !== undefined) out.origin = (['igp', 'egp', 'incomplete'] as const)[a.origin]
  if (a.asPath !== undefined) out.asPath = segments(a.asPath)
  if (a.nextHop !== undefined) out.nextHop = a.nextHop
  if (a.med !== undefined) out.med = a.med
  if (a.localPref !== undefined) out.localPref = a.localPref
  if (a.atomicAggregate) out.atomicAggregate = true
  if (a.aggregator !== undefined) out.aggregator = a.aggregator
  if (a.communities !== undefined) out.communities = a.communities.map(formatCommunity)
  if (a.originatorId !== undefined) out.originatorId = a.originatorId
  if (a.clusterList !== undefined) out.clusterList = a.clusterList
  if (a.extCommunities !== undefined) out.extCommunities = a.extCommunities.map(formatExtCommunity)
  if (a.as4Path !== undefined) out.as4Path = segments(a.as4Path)
  if (a.as4Aggregator !== undefined) out.as4Aggregator = a.as4Aggregator
  if (a.largeCommunities !== undefined) out.largeCommunities = a.largeCommunities.map((l) => l.join(':'))
  if (a.unknown !== undefined) out.unknown = a.unknown.map((u) => ({ code: u.code, flags: u.flags, value: hex(u.value) }))
  return out
}

function capabilityToJson(c: Capability): Record<string, unknown> {
  switch (c.kind) {
    case 'unknown':
      return { name: capabilityName(c), code: c.code, value: hex(c.value) }
    case 'multiprotocol':
      return { name: c.kind, afi: c.afi, safi: c.safi }
    case 'graceful-restart':
      return { name: c.kind, restartState: c.restartState, notification: c.notification, restartTime: c.restartTime, families: c.families }
    case 'four-octet-as':
      return { name: c.kind, asn: c.asn }
    case 'add-path':
      return { name: c.kind, families: c.families.map((f) => ({ afi: f.afi, safi: f.safi, mode: (['', 'receive', 'send', 'both'] as const)[f.mode] })) }
    case 'route-refresh':
    case 'enhanced-route-refresh':
    case 'extended-message':
      return { name: c.kind }
    default: {
      const never: never = c
      return never
    }
  }
}

export function messageToJson(msg: BgpMessage): Record<string, unknown> {
  switch (msg.type) {
    case 'open':
      return {
        type: 'open',
        version: msg.version,
        myAs: msg.myAs,
        holdTime: msg.holdTime,
        bgpId: msg.bgpId,
        capabilities: msg.capabilities.map(capabilityToJson),
      }
    case 'update': {
      const out: Record<string, unknown> = { type: 'update' }
      if (msg.endOfRib) out.endOfRib = msg.endOfRib
      if (msg.withdrawn.length > 0) out.withdrawn = prefixes(msg.withdrawn, false)
      const attrs = attributesToJson(msg.attributes)
      if (Object.keys(attrs).length > 0) out.attributes = attrs
      if (msg.nlri.length > 0) out.nlri = prefixes(msg.nlri, false)
      if (msg.mpReach) {
        const m = msg.mpReach
        out.mpReach = m.raw ? { afi: m.afi, safi: m.safi, raw: hex(m.raw) } : { afi: m.afi, safi: m.safi, nextHop: m.nextHop, nlri: prefixes(m.nlri, false) }
      }
      if (msg.mpUnreach && !msg.endOfRib) {
        const m = msg.mpUnreach
        out.mpUnreach = m.raw ? { afi: m.afi, safi: m.safi, raw: hex(m.raw) } : { afi: m.afi, safi: m.safi, withdrawn: prefixes(m.withdrawn, false) }
      }
      if (msg.error) out.error = msg.error.toJSON()
      return out
    }
    case 'notification':
      return {
        type: 'notification',
        code: msg.code,
        subcode: msg.subcode,
        text: notificationText(msg.code, msg.subcode),
        ...(msg.data.length > 0 ? { data: hex(msg.data) } : {}),
        ...(msg.shutdownMessage !== undefined ? { shutdownMessage: msg.shutdownMessage } : {}),
      }
    case 'keepalive':
      return { type: 'keepalive' }
    case 'route-refresh':
      return { type: 'route-refresh', afi: msg.afi, safi: msg.safi, subtype: (['normal', 'borr', 'eorr'] as const)[msg.subtype] ?? msg.subtype }
    default: {
      const never: never = msg
      return never
    }
  }
}
