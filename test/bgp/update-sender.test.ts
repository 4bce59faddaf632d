// The UPDATE sender over a real loopback socket whose reader keeps up: a table many times one pump's bound
// goes out whole, End-of-RIB after it, though the kernel takes every write at once and no drain event
// comes to wake the sender.
import t from 'tap'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { once } from 'node:events'
import pino from 'pino'
import { Framer, IPV4_UNICAST, codecOptions, decodeMessage, encodeMessage, ipv4Prefix } from '../../bgp/index.js'
import { UpdateSender } from '../../bgp/session/update-sender.js'
import type { Negotiated } from '../../bgp/session/negotiate.js'
import { newCounters } from '../../bgp/session/peer-status.js'
import { waitFor } from '../harness/wait.js'
import { peer, rib } from './rib-helpers.js'

const TX = codecOptions({ as4: true })
const SESSION: Negotiated = {
  peerAsn: 64512,
  peerRouterId: '192.0.2.1',
  holdTime: 90,
  keepaliveTime: 30,
  as4: true,
  families: new Set([IPV4_UNICAST]),
  routeRefresh: true,
  enhancedRouteRefresh: false,
  extendedMessage: false,
  addPathReceive: new Set(),
  addPathSend: new Set(),
  peerGracefulRestart: undefined,
  rx: TX,
  tx: TX,
  unknownCapabilities: [],
}

/** A loopback connection: the sender's end, and the server's end, which decodes what arrives. */
async function pair(t: Tap.Test): Promise<{ out: Socket; seen: { prefixes: number; updates: number; endOfRib: number; afterEnd: number } }> {
  const seen = { prefixes: 0, updates: 0, endOfRib: 0, afterEnd: 0 }
  let reading: Socket | undefined
  const server: Server = createServer((s) => {
    reading = s
    const framer = new Framer()
    s.on('data', (chunk: Buffer) => {
      for (const frame of framer.push(chunk)) {
        const m = decodeMessage(frame, TX)
        if (m.type !== 'update') continue
        if (m.endOfRib !== undefined) {
          seen.endOfRib++
          continue
        }
        if (seen.endOfRib > 0) seen.afterEnd++
        seen.updates++
        seen.prefixes += m.nlri.length
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as { port: number }).port
  const out = connect(port, '127.0.0.1')
  await once(out, 'connect')
  await waitFor(() => reading !== undefined, { timeoutMs: 5000, what: 'the accepted connection' })
  t.teardown(() => {
    out.destroy()
    reading?.destroy()
    server.close()
  })
  return { out, seen }
}

function sender(out: Socket): UpdateSender {
  const counters = newCounters()
  return new UpdateSender({
    log: pino({ level: 'silent' }),
    counters,
    wire: {
      queued: () => (out.destroyed ? undefined : out.writableLength),
      write: (bytes) => void out.write(bytes),
      send: (m) => void out.write(encodeMessage(m, TX)),
    },
  })
}

/** `n` of our own /32s, each 8 sharing a MED: many batches, some 700 KB of UPDATEs in all. */
function table(n: number): ReturnType<typeof rib> {
  const r = rib()
  for (let i = 0; i < n; i++) r.originate(ipv4Prefix((0x0a000000 + i) >>> 0, 32), { med: i >> 3 })
  r.flush()
  return r
}

t.test('a table far over one pump\'s bound is sent whole, End-of-RIB last', async (t) => {
  const N = 60_000
  const r = table(N)
  const { out, seen } = await pair(t)
  const adjOut = r.attachPeer(peer({ address: '192.0.2.1' }))
  t.equal(adjOut.pending, N, 'the whole table is pending')
  sender(out).attach(adjOut, SESSION)
  await waitFor(() => seen.endOfRib === 1, { timeoutMs: 20_000, what: 'End-of-RIB' })
  t.equal(seen.prefixes, N, 'every prefix arrived')
  t.equal(seen.afterEnd, 0, 'nothing after End-of-RIB')
  t.equal(adjOut.pending, 0, 'nothing left pending')
})
