// The BFD service's one tick over real loopback sockets, on a fake clock: two services (two ends, on
// their own ports) bring four sessions Up, then the tick runs once per jittered interval for all four —
// one shared draw, not the earliest of four — and every session sends in it; the receive queue is read in
// batches larger than one recvmmsg(2) call, each datagram with its kernel arrival time.
import { createSocket, type Socket } from 'node:dgram'
import t from 'tap'
import pino from 'pino'
import { BfdService } from '../../../bgp/bfd/service.js'
import type { BfdSessionSpec } from '../../../bgp/bfd/session.js'
import { DatagramBatch } from '../../../bgp/session/datagram-batch.js'
import { closeFd, openPolledUdp } from '../../../bgp/session/socket-options.js'
import { FakeClock } from '../../harness/fake-clock.js'
import { waitFor } from '../../harness/wait.js'

/** mulberry32: a uniform [0, 1) sequence the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 0x1_0000_0000
  }
}

const PARAMS = { desiredMinTxUs: 100_000, requiredMinRxUs: 100_000, detectMult: 3 }
const SESSIONS = 4

function specs(from: string, to: string): BfdSessionSpec[] {
  return Array.from({ length: SESSIONS }, (_, i) => ({
    name: `s${i}`,
    localAddress: `${from}.${i + 1}`,
    peerAddress: `${to}.${i + 1}`,
    family: 'ipv4' as const,
    params: PARAMS,
  }))
}

/** A UDP port on loopback the kernel says is free (another process may take it before it is bound again). */
async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4')
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r))
  const port = s.address().port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

/** Moves the fake clock on in 5 ms steps, letting the kernel deliver between them. */
async function run(clock: FakeClock, ms: number): Promise<void> {
  for (let done = 0; done < ms; done += 5) {
    clock.advance(5)
    await new Promise((r) => setImmediate(r))
  }
}

t.test('four sessions Up share one tick per jittered interval', async (t) => {
  const clock = new FakeClock()
  const logger = pino({ level: 'silent' })
  const portA = await freeUdpPort()
  let portB = await freeUdpPort()
  while (portB === portA) portB = await freeUdpPort()
  const a = new BfdService({ logger, clock, port: portA, peerPort: portB, random: seeded(1) })
  const b = new BfdService({ logger, clock, port: portB, peerPort: portA, random: seeded(2) })
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  await a.setSessions(specs('127.0.1', '127.0.2'))
  await b.setSessions(specs('127.0.2', '127.0.1'))
  const allUp = (): boolean => [...a.status(), ...b.status()].every((s) => s.state === 'Up' && s.txIntervalMs === 100)
  for (let waited = 0; !allUp() && waited < 10_000; waited += 100) await run(clock, 100)
  t.ok(allUp(), 'both ends of all four sessions Up at 100 ms within 10 s of fake time')

  const ticks0 = a.counters.ticks
  const sent0 = a.status().map((s) => s.packetsSent)
  const seconds = 60
  await run(clock, seconds * 1000)
  const ticks = a.counters.ticks - ticks0
  const sent = a.status().map((s, i) => s.packetsSent - sent0[i]!)
  // One draw per tick: intervals uniform in 75–100 ms, 87.5 ms on average, 686 ticks in 60 s. The
  // earliest of four draws would average 80 ms: 750 ticks.
  t.ok(ticks >= seconds / 0.1 && ticks <= (seconds / 0.0875) * 1.03, `${ticks} ticks in ${seconds} s: one per jittered interval`)
  t.ok(sent.every((n) => n === sent[0]), `every session sent as often (${sent.join(', ')})`)
  t.ok(sent[0]! >= ticks - 1 && sent[0]! <= ticks + 1, `each session sends in every tick (${sent[0]} packets, ${ticks} ticks)`)
  t.ok([...a.status(), ...b.status()].every((s) => s.state === 'Up' && s.upTransitions === 1), 'no session left Up meanwhile')
})

t.test('a batch read takes what is queued, in slots, with the kernel arrival time', async (t) => {
  const port = await freeUdpPort()
  const fd = openPolledUdp(4, '127.0.0.1', port, 'test socket')
  t.teardown(() => closeFd(fd))
  const batch = new DatagramBatch(fd, 4, 64)
  t.equal(batch.read(), 0, 'an empty queue reads 0')
  const sender: Socket = createSocket('udp4')
  t.teardown(() => sender.close())
  await new Promise<void>((r) => sender.bind(0, '127.0.0.1', r))
  const before = Date.now()
  for (let i = 0; i < 6; i++) await new Promise<void>((r, j) => sender.send(Buffer.from(`datagram ${i}${i === 5 ? 'x'.repeat(100) : ''}`), port, '127.0.0.1', (e) => (e ? j(e) : r())))
  let first = 0
  await waitFor(() => (first = batch.read()) > 0 || undefined, { timeoutMs: 2000, intervalMs: 1, what: 'the first datagrams queued' })
  const after = Date.now()
  const seen: string[] = []
  const collect = (n: number): void => {
    for (let i = 0; i < n; i++) {
      seen.push(batch.payload(i).toString())
      t.equal(batch.sender(i).readUInt16BE(2), sender.address().port, `datagram ${seen.length - 1}: the sender's port`)
      const at = batch.arrival(i)
      t.ok(at !== undefined && at >= before - 1 && at <= after + 1, `datagram ${seen.length - 1}: arrived at ${at}, between the sends and the read`)
    }
  }
  t.equal(first, 4, 'the first read fills the four slots')
  collect(first)
  let n = 0
  await waitFor(() => (n = batch.read()) > 0 || undefined, { timeoutMs: 2000, intervalMs: 1, what: 'the rest' })
  collect(n)
  t.same(seen.slice(0, 5), ['datagram 0', 'datagram 1', 'datagram 2', 'datagram 3', 'datagram 4'], 'four in the first read, the rest in the next, in order')
  t.equal(seen[5], `datagram 5${'x'.repeat(100)}`.slice(0, 64), 'a datagram longer than its slot is cut to the slot')
  t.equal(batch.read(), 0, 'then the queue is empty')
})
