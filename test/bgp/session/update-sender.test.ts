// The UPDATE sender over a real loopback socket whose reader keeps up: a table many times one pump's bound
// goes out whole, End-of-RIB after it, though the kernel takes every write at once and no drain event
// comes to wake the sender. Senders share the buffer they join a pump's UPDATEs in: one whose write
// the kernel left queued keeps it, so a slow reader never sees another sender's bytes.
import t from 'tap'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { once } from 'node:events'
import pino from 'pino'
import { Framer, codecOptions, decodeMessage, encodeMessage, ipv4Prefix } from '../../../bgp/index.js'
import { UpdateSender } from '../../../bgp/session/update-sender.js'
import { SOL, fdOf, setIntOption } from '../../../bgp/session/socket-options.js'
import { newCounters } from '../../../bgp/session/peer-status.js'
import { waitFor } from '../../harness/wait.js'
import { negotiated, peer, rib } from '../rib/helpers.js'

const TX = codecOptions({ as4: true })
const SESSION = negotiated()

/** A loopback connection: the sender's end, and the server's end, which decodes what arrives. */
interface Seen {
  prefixes: number
  updates: number
  endOfRib: number
  afterEnd: number
  /** Prefixes outside the range the test expects. */
  foreign: number
}

/** `first`: the first address the reader expects; every prefix outside [first, first + 2^24) is foreign. */
async function pair(t: Tap.Test, first = 0x0a000000): Promise<{ out: Socket; reader: () => Socket; seen: Seen }> {
  const seen: Seen = { prefixes: 0, updates: 0, endOfRib: 0, afterEnd: 0, foreign: 0 }
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
        for (const p of m.nlri) if (p.afi !== 1 || p.addr < first || p.addr >= first + 0x1000000) seen.foreign++
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
  return { out, reader: () => reading!, seen }
}

function sender(out: Socket): UpdateSender {
  const counters = newCounters()
  const s = new UpdateSender({
    log: pino({ level: 'silent' }),
    counters,
    wire: {
      queued: () => (out.destroyed ? undefined : out.writableLength),
      write: (bytes) => void out.write(bytes),
      send: (m) => void out.write(encodeMessage(m, TX)),
    },
  })
  // As the peer shell does: room again in the socket, the sender goes on.
  out.on('drain', () => s.pump())
  return s
}

/** `n` of our own /32s from `first`, each 8 sharing a MED: many batches, some 700 KB of UPDATEs in all. */
function table(n: number, first = 0x0a000000): ReturnType<typeof rib> {
  const r = rib()
  for (let i = 0; i < n; i++) r.originate(ipv4Prefix((first + i) >>> 0, 32), { med: i >> 3 })
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

const SO_SNDBUF = 7
const SO_RCVBUF = 8

t.test('a sender whose reader stalls keeps its queued bytes while another sends on', async (t) => {
  const N = 60_000
  const A = 0x0a000000
  const B = 0x0b000000
  const ra = table(N, A)
  const rb = table(N, B)
  const a = await pair(t, A)
  const b = await pair(t, B)
  // Small kernel buffers on A's connection, so the kernel soon stops taking what A's sender writes.
  setIntOption(fdOf(a.out), SOL.socket, SO_SNDBUF, 16 * 1024, 'SO_SNDBUF')
  setIntOption(fdOf(a.reader()), SOL.socket, SO_RCVBUF, 16 * 1024, 'SO_RCVBUF')
  a.reader().pause()
  const outA = ra.attachPeer(peer({ address: '192.0.2.1' }))
  const outB = rb.attachPeer(peer({ address: '192.0.2.2' }))
  sender(a.out).attach(outA, SESSION)
  await waitFor(() => a.out.writableLength > 0, { timeoutMs: 20_000, what: 'a write the kernel left queued' })
  sender(b.out).attach(outB, SESSION)
  await waitFor(() => b.seen.endOfRib === 1, { timeoutMs: 20_000, what: "B's End-of-RIB" })
  a.reader().resume()
  await waitFor(() => a.seen.endOfRib === 1, { timeoutMs: 20_000, what: "A's End-of-RIB" })
  for (const [name, seen] of [['A', a.seen], ['B', b.seen]] as const) {
    t.equal(seen.prefixes, N, `${name}: every prefix arrived`)
    t.equal(seen.foreign, 0, `${name}: none of the other table's`)
    t.equal(seen.afterEnd, 0, `${name}: nothing after End-of-RIB`)
  }
})
