// Runs a made-up IPv4 table dump through the receive path (framer, UPDATE decode, Adj-RIB-In, Loc-RIB
// flush, deltas) into a scratch RIB of its own, so that V8 has compiled that code before a peer's first
// table arrives. Pure apart from CPU: it never touches a session, a socket or the speaker's RIB.

import { Afi, IPV4_UNICAST, Safi } from '../codec/constants.js'
import { Framer } from '../codec/framer.js'
import { decodeMessage } from '../codec/message.js'
import { codecOptions } from '../codec/options.js'
import { packUpdates } from '../codec/pack.js'
import type { PathAttributes } from '../codec/attributes.js'
import { ipv4Prefix, type Prefix } from '../codec/nlri.js'
import { Rib } from '../rib/rib.js'
import type { Policy, RibPeer } from '../rib/types.js'

export interface WarmResult {
  readonly prefixes: number
  /** Loc-RIB delta entries the scratch RIB's flushes handed out (every prefix is new: `prefixes`). */
  readonly deltas: number
}

/** About what arrives before V8 compiles a path that starts cold (64 KB of UPDATEs is ~12k prefixes). */
const WARM_PREFIXES = 5000
/** A read of the socket: the session flushes the RIB once per read. */
const READ_BYTES = 65_536

/**
 * The scratch table, shaped as a full table is, so that what V8 learns holds for a real one: /24s with
 * 5 % /32s and 3 % /16-/23s under 10.0.0.0/8 (never installed anywhere) in a scattered order, attribute
 * sets of 1-40 prefixes with LOCAL_PREF, 4-octet origin ASes, a MED on a third, 0-3 communities.
 */
function scratchTable(count: number): { attrs: PathAttributes; prefixes: Prefix[] }[] {
  const all: Prefix[] = []
  for (let j = 0; j < count; j++) {
    if (j % 20 === 0) all.push(ipv4Prefix((0x0aff0000 + j) >>> 0, 32))
    else if (j % 33 === 1) all.push(ipv4Prefix((0x0a000000 + ((j * 4096) & 0xfff000)) >>> 0, 16 + (j % 8)))
    else all.push(ipv4Prefix((0x0a000000 + j * 256) >>> 0, 24))
  }
  // A fixed scatter: strides of 7919 through the prefixes, stepping past those already taken.
  const order: Prefix[] = []
  const seen = new Uint8Array(count)
  for (let k = 0, j = 0; k < count; k++, j = (j + 7919) % count) {
    while (seen[j] === 1) j = (j + 1) % count
    seen[j] = 1
    order.push(all[j]!)
  }
  const sets: { attrs: PathAttributes; prefixes: Prefix[] }[] = []
  for (let at = 0; at < count; ) {
    const k = sets.length
    const size = Math.min(count - at, 1 + ((k * 17) % 40))
    const asns = Array.from({ length: k % 5 }, (_, h) => 65001 + ((k * 7 + h * 13) % 500))
    asns.push(4200000000 + k)
    const attrs: PathAttributes = {
      origin: k % 10 === 0 ? 2 : 0,
      asPath: [{ type: 2, asns }],
      nextHop: '192.0.2.2',
      ...(k % 3 === 0 ? { med: k % 1000 } : {}),
      localPref: 100,
      ...(k % 4 !== 0 ? { communities: Array.from({ length: k % 4 }, (_, c) => (((65001 + c) << 16) | ((k + c * 101) % 65536)) >>> 0) } : {}),
    }
    sets.push({ attrs, prefixes: order.slice(at, at + size) })
    at += size
  }
  return sets
}

/**
 * `count` prefixes through the receive path into a scratch RIB behind `policy` (the one a peer's table
 * would meet), read back as deltas, then dropped. ~60-90 ms of CPU for the default on a loaded 2-core machine.
 */
export function warmReceivePath(policy: Policy, count = WARM_PREFIXES): WarmResult {
  const opts = codecOptions({ as4: true, extendedMessage: false })
  const rib = new Rib({ localAsn: 64512, routerId: '192.0.2.1' })
  let deltas = 0
  let hops = 0
  rib.subscribeDeltas((d) => {
    for (let i = 0; i < d.count; i++) hops += d.len(i) + (d.hopCount(i) > 0 ? d.hop(i, 0) : 0)
    deltas += d.count
  })
  const peer: RibPeer = {
    id: 1,
    name: 'warm-up',
    address: '192.0.2.2',
    localAddress: '192.0.2.1',
    asn: 64512,
    localAsn: 64512,
    type: 'ibgp',
    rrClient: false,
    nextHopMode: 'auto',
    allowLocalAs: 0,
    importPolicy: policy,
    families: new Set([IPV4_UNICAST]),
    addPathSend: new Set(),
  }
  const session = { routerId: '192.0.2.2' }
  const framer = new Framer()
  let prefixes = 0
  const stream: Uint8Array[] = []
  for (const set of scratchTable(count)) stream.push(...packUpdates({ afi: Afi.IPV4, safi: Safi.UNICAST, attributes: set.attrs, announce: set.prefixes }, opts))
  const wire = Buffer.concat(stream)
  for (let at = 0; at < wire.length; at += READ_BYTES) {
    for (const frame of framer.push(wire.subarray(at, at + READ_BYTES))) {
      const m = decodeMessage(frame, opts, true)
      if (m.type !== 'update' || m.nlriColumns === undefined) continue
      prefixes += m.nlriColumns.count
      rib.receiveIpv4(peer, session, m.nlriColumns, m.attributes)
    }
    rib.flush()
  }
  if (hops < 0) throw new Error('unreachable: keeps the delta reads')
  return { prefixes, deltas }
}
