// bench/bgp-clients: many minimal iBGP clients in one process, for the reflection benchmark.
//   node dist/bench/bgp-clients.js '{"count":200,"server":"127.0.0.1","asn":65000}'
// Client i connects from 127.0.1.i, announces one /26 once Established, and counts the prefixes it
// holds (its own plus what the reflector sends). Prints {"event":"done"} with timings when every client
// holds all `count` routes. Built on pinto's codec only; no RIB, no policy.

import { connect } from 'node:net'
import { Afi, Framer, KEEPALIVE, Safi, codecOptions, decodeMessage, encodeMessage, formatPrefix, ipv4Prefix, makeOpen, packUpdates, parseIpv4 } from '../bgp/codec/index.js'

const args = JSON.parse(process.argv[2] ?? '{}') as { count: number; server: string; asn: number }
const opts = codecOptions({ as4: true })
const say = (o: Record<string, unknown>): void => void process.stdout.write(JSON.stringify(o) + '\n')
const started = Date.now()
let complete = 0
let lastEstablished = 0
const base = parseIpv4('198.18.0.0')!

for (let i = 1; i <= args.count; i++) {
  const local = `127.0.1.${i}`
  const own = ipv4Prefix((base + (i - 1) * 64) >>> 0, 26)
  const held = new Set<string>([formatPrefix(own)])
  let done = false
  const socket = connect({ host: args.server, port: 179, localAddress: local })
  socket.setNoDelay(true)
  const framer = new Framer()
  socket.on('connect', () => {
    const open = makeOpen({ asn: args.asn, holdTime: 240, bgpId: local, capabilities: [{ kind: 'multiprotocol', afi: Afi.IPV4, safi: Safi.UNICAST }, { kind: 'four-octet-as', asn: args.asn }] })
    socket.write(encodeMessage(open, codecOptions()))
  })
  let established = false
  socket.on('data', (chunk: Buffer) => {
    for (const frame of framer.push(chunk)) {
      const msg = decodeMessage(frame, opts)
      if (msg.type === 'open') socket.write(encodeMessage(KEEPALIVE, opts))
      else if (msg.type === 'keepalive' && !established) {
        established = true
        lastEstablished = Date.now()
        for (const u of packUpdates({ afi: Afi.IPV4, attributes: { origin: 0, asPath: [], nextHop: local, localPref: 100 }, announce: [own] }, opts)) socket.write(u)
      } else if (msg.type === 'update') {
        for (const p of msg.withdrawn) held.delete(formatPrefix(p))
        for (const p of msg.nlri) held.add(formatPrefix(p))
      } else if (msg.type === 'notification') {
        say({ event: 'notification', client: local, code: msg.code, subcode: msg.subcode })
        process.exit(1)
      }
    }
    if (!done && held.size >= args.count) {
      done = true
      if (++complete === args.count) {
        const now = Date.now()
        say({ event: 'done', seconds: (now - started) / 1000, sinceLastEstablished: (now - lastEstablished) / 1000 })
      }
    }
  })
  socket.on('error', (e) => {
    say({ event: 'error', client: local, message: e.message })
    process.exit(1)
  })
}
setInterval(() => say({ event: 'progress', complete }), 1000).unref()
process.on('SIGTERM', () => process.exit(0))
// Keep the process (and the sessions) alive until killed.
setInterval(() => {}, 1 << 30)
