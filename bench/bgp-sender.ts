// bench/bgp-sender: a minimal BGP speaker that replays pre-encoded UPDATEs, for the ingest benchmark.
//   ip netns exec NS node dist/bench/bgp-sender.js '{"peer":..,"local":..,"asn":..,"count":..}'
// Encodes N IPv4 /32s once (packUpdates, one attribute set), connects, exchanges OPENs, and on Established
// prints {"event":"established","at":ms} then writes every UPDATE and End-of-RIB as fast as the socket
// takes them, printing {"event":"sent","at":ms}. Keeps the session up with keepalives until killed.

import { Afi, Safi, codecOptions, encodeMessage, endOfRibUpdate, ipv4Prefix, packUpdates, type Prefix } from '../bgp/codec/index.js'
import { openSenderSession, say, writeAll } from './sender-session.js'
import { parseIpv4 } from '../net/index.js'

interface Args {
  readonly peer: string
  readonly local: string
  readonly asn: number
  readonly count: number
  /** First address, dotted; prefix i is base + i (/32s). */
  readonly base: string
  /** The peer's port; default 179. */
  readonly port?: number
  /**
   * Prefixes per attribute set (default: all in one). With k, consecutive runs of k prefixes get AS paths
   * of their own, as a real table's UPDATEs carry a few prefixes each.
   */
  readonly perSet?: number
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args
const base = parseIpv4(args.base)
if (base === undefined) throw new Error(`base: ${JSON.stringify(args.base)} is not an IPv4 address`)
const opts = codecOptions({ as4: true, extendedMessage: false })
const prefixes: Prefix[] = new Array<Prefix>(args.count)
for (let i = 0; i < args.count; i++) prefixes[i] = ipv4Prefix((base + i) >>> 0, 32)
const perSet = args.perSet ?? args.count
const updates: Buffer[] = []
for (let i = 0; i < args.count; i += perSet) {
  const asPath = perSet === args.count ? [] : [{ type: 2 as const, asns: [64600 + (i % 100), 100000 + Math.floor(i / perSet)] }]
  updates.push(...packUpdates({ afi: Afi.IPV4, safi: Safi.UNICAST, attributes: { origin: 0, asPath, nextHop: args.local, localPref: 100 }, announce: prefixes.slice(i, i + perSet) }, opts))
}
updates.push(encodeMessage(endOfRibUpdate(Afi.IPV4, Safi.UNICAST), opts))
const bytes = updates.reduce((n, b) => n + b.length, 0)
say({ event: 'encoded', updates: updates.length, bytes })

openSenderSession({ peer: args.peer, local: args.local, routerId: args.local, asn: args.asn, afi: Afi.IPV4, ...(args.port !== undefined ? { port: args.port } : {}) }, opts, Date.now, (socket) => {
  void writeAll(socket, updates).then(() => say({ event: 'sent', at: Date.now() }))
})
