// A bare BGP end on a real loopback socket, for tests of the session shell's timers: it sends what the test
// writes and keeps what it receives, in order, with no FSM or timer of its own. With it, a speaker on a
// FakeClock, started and stopped in t.teardown, so timer expiries happen when the test advances the clock.

import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import type { Test } from 'tap'
import { Afi, BgpSpeaker, Framer, KEEPALIVE, Safi, codecOptions, decodeMessage, encodeMessage, makeOpen, type BgpMessage, type Capability } from '../../../bgp/index.js'
import type { PeerConfig } from '../../../bgp/session/peer-config.js'
import type { PeerStatus } from '../../../bgp/session/peer.js'
import { FakeClock } from '../../harness/fake-clock.js'
import { waitFor } from '../../harness/wait.js'

export const BARE_OPTS = codecOptions({ as4: true })
export const SPEAKER_ADDRESS = '127.0.0.1'
export const BARE_ADDRESS = '127.0.0.2'

export class BarePeer {
  readonly got: BgpMessage[] = []
  closed = false

  constructor(readonly socket: Socket) {
    const framer = new Framer()
    socket.on('data', (chunk: Buffer) => {
      for (const frame of framer.push(chunk)) this.got.push(decodeMessage(frame, BARE_OPTS))
    })
    socket.on('close', () => {
      this.closed = true
    })
    socket.on('error', () => socket.destroy())
  }

  send(msg: BgpMessage): void {
    this.socket.write(encodeMessage(msg, BARE_OPTS))
  }

  /** Raw bytes, for messages the codec would not write. */
  write(bytes: Uint8Array): void {
    this.socket.write(bytes)
  }

  count(type: BgpMessage['type']): number {
    return this.got.filter((m) => m.type === type).length
  }

  /** Waits (real time: socket I/O only) until the peer has received `n` messages of `type`. */
  async received(type: BgpMessage['type'], n = 1): Promise<BgpMessage> {
    return waitFor(() => this.got.filter((m) => m.type === type)[n - 1], { timeoutMs: 5000, intervalMs: 2, what: `${type} #${n} from pinto` })
  }
}

export interface Harness {
  readonly clock: FakeClock
  readonly speaker: BgpSpeaker
  status(): PeerStatus
  /** Connects a bare peer from BARE_ADDRESS to the speaker's listener. */
  connect(): Promise<BarePeer>
}

/** A speaker (AS 64512) on a FakeClock listening on SPEAKER_ADDRESS with one peer `bare`, passive unless `over` says not. */
export async function speakerWithBarePeer(t: Test, over: Partial<PeerConfig> = {}, clock = new FakeClock()): Promise<Harness> {
  const speaker = new BgpSpeaker({ asn: 64512, routerId: '192.0.2.1', clock, listen: { port: 0, hosts: [SPEAKER_ADDRESS] } })
  await speaker.start()
  const bares: BarePeer[] = []
  t.teardown(async () => {
    for (const b of bares) b.socket.destroy()
    await speaker.stop()
  })
  speaker.addPeer({ name: 'bare', address: BARE_ADDRESS, localAddress: SPEAKER_ADDRESS, peerAsn: 64512, passive: true, ...over })
  const status = (): PeerStatus => speaker.peerStatus().find((s) => s.name === 'bare')!
  return {
    clock,
    speaker,
    status,
    async connect() {
      const socket = connect({ host: SPEAKER_ADDRESS, port: speaker.port!, localAddress: BARE_ADDRESS })
      const bare = new BarePeer(socket)
      bares.push(bare)
      await once(socket, 'connect')
      return bare
    },
  }
}

export const IPV4_CAPS: Capability[] = [
  { kind: 'multiprotocol', afi: Afi.IPV4, safi: Safi.UNICAST },
  { kind: 'four-octet-as', asn: 64512 },
]

/** The bare peer's OPEN: AS 64512, identifier 192.0.2.2, IPv4 unicast, plus `extra` capabilities. */
export const bareOpen = (holdTime: number, extra: readonly Capability[] = [], asn = 64512): BgpMessage =>
  makeOpen({ asn, holdTime, bgpId: '192.0.2.2', capabilities: [...IPV4_CAPS.map((c) => (c.kind === 'four-octet-as' ? { ...c, asn } : c)), ...extra] })

/** Brings the session up from the bare side: OPEN, pinto's OPEN and KEEPALIVE, our KEEPALIVE, Established. */
export async function establish(h: Harness, holdTime: number, extra: readonly Capability[] = []): Promise<BarePeer> {
  const bare = await h.connect()
  bare.send(bareOpen(holdTime, extra))
  await bare.received('open')
  await bare.received('keepalive')
  bare.send(KEEPALIVE)
  await waitFor(() => h.status().state === 'Established' || undefined, { timeoutMs: 5000, intervalMs: 2, what: 'Established' })
  return bare
}

/** Waits (real time) until the speaker has taken in `n` messages from the peer in all. */
export async function taken(h: Harness, n: number): Promise<void> {
  await waitFor(() => h.status().counters.messagesIn >= n || undefined, { timeoutMs: 5000, intervalMs: 2, what: `${n} messages taken in` })
}
