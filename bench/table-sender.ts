// bench/table-sender: the BGP peer bench/node-path feeds a receiver with. It builds route-mix's table for
// one family, encodes it once (packUpdates, one run of UPDATEs per attribute set; MP_REACH_NLRI for
// IPv6), connects when told, and on Established writes every UPDATE and End-of-RIB as fast as the
// socket takes them.
//   ip netns exec NS node dist/bench/table-sender.js '{"peer":..,"local":..,"asn":..,"family":"ipv4","count":..}'
// Prints JSON lines: encoded; after {"op":"connect"} on stdin, established {at} and sent {at}. Then each
// stdin line {"op":"announce"|"withdraw","k":K} writes one UPDATE for churnPrefix(family, K) and prints
// {"event":"wrote","k":K,"op":..,"at":ms}. Times are performance.timeOrigin + now(), the clock the bench
// reads too. Keeps the session up with keepalives until stdin ends or SIGTERM.

import type { Socket } from 'node:net'
import { createInterface } from 'node:readline'
import { Afi, Safi, codecOptions, encodeMessage, endOfRibUpdate, packUpdates, type UpdateBatch } from '../bgp/codec/index.js'
import { openSenderSession, say, writeAll } from './sender-session.js'
import { churnAttributes, churnPrefix, routeMix, type MixFamily } from './route-mix.js'

interface Args {
  readonly peer: string
  /** This end's address on the session, the table's next hop. */
  readonly local: string
  /** The router id (the session may be IPv6). */
  readonly routerId: string
  readonly asn: number
  readonly family: MixFamily
  readonly count: number
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args
if (args.family !== 'ipv4' && args.family !== 'ipv6') throw new Error(`family: ${JSON.stringify(args.family)} is neither ipv4 nor ipv6`)
const now = (): number => performance.timeOrigin + performance.now()
const afi = args.family === 'ipv4' ? Afi.IPV4 : Afi.IPV6
const opts = codecOptions({ as4: true, extendedMessage: false })
const v4 = args.family === 'ipv4'

function batch(announce: UpdateBatch['announce'], withdraw: UpdateBatch['withdraw'], attributes = churnAttributes(args.family, v4 ? args.local : undefined)): UpdateBatch {
  return { afi, safi: Safi.UNICAST, attributes, ...(v4 ? {} : { nextHop: [args.local] }), ...(announce ? { announce } : {}), ...(withdraw ? { withdraw } : {}) }
}

const mix = routeMix(args.family, args.count, v4 ? args.local : undefined)
const updates: Buffer[] = []
for (const set of mix.sets) updates.push(...packUpdates(batch(set.prefixes, undefined, set.attributes), opts))
updates.push(encodeMessage(endOfRibUpdate(afi, Safi.UNICAST), opts))
say({ event: 'encoded', updates: updates.length, bytes: updates.reduce((n, b) => n + b.length, 0), sets: mix.sets.length, shape: mix.shape })

let session: Socket | undefined
const lines = createInterface({ input: process.stdin })
lines.on('line', (line) => {
  const cmd = JSON.parse(line) as { op: 'connect' | 'announce' | 'withdraw'; k?: number }
  if (cmd.op === 'connect') {
    openSenderSession({ peer: args.peer, local: args.local, routerId: args.routerId, asn: args.asn, afi }, opts, now, (socket) => {
      void writeAll(socket, updates).then(() => {
        session = socket
        say({ event: 'sent', at: now() })
      })
    })
    return
  }
  if (session === undefined) throw new Error(`${line}: the table is not sent yet`)
  const k = cmd.k ?? 0
  const prefix = churnPrefix(args.family, k)
  const [u] = packUpdates(cmd.op === 'announce' ? batch([prefix], undefined) : batch(undefined, [prefix]), opts)
  if (u === undefined) throw new Error(`churn ${line}: no UPDATE encoded`)
  const at = now()
  session.write(u)
  say({ event: 'wrote', k, op: cmd.op, at })
})
lines.on('close', () => process.exit(0))
