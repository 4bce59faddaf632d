// The hold timer over a real socket: every UPDATE and KEEPALIVE received pushes it on (the timer stays
// armed and re-arms itself when it fires before the deadline), and once the peer falls silent pinto
// sends Hold Timer Expired after the hold time, not before and not long after.
import t from 'tap'
import { connect, type Socket } from 'node:net'
import { once } from 'node:events'
import { Afi, BgpSpeaker, ErrorCode, Framer, KEEPALIVE, Safi, codecOptions, decodeMessage, encodeMessage, ipv4Prefix, makeOpen, packUpdates, type BgpMessage } from '../../bgp/index.js'
import { waitFor } from '../harness/wait.js'

const opts = codecOptions({ as4: true })

/** A bare BGP peer on a socket: what it received, in order, with the time each arrived. */
function bare(socket: Socket): { readonly got: { msg: BgpMessage; at: number }[] } {
  const framer = new Framer()
  const got: { msg: BgpMessage; at: number }[] = []
  socket.on('data', (chunk: Buffer) => {
    for (const frame of framer.push(chunk)) got.push({ msg: decodeMessage(frame, opts), at: Date.now() })
  })
  return { got }
}

t.test('messages keep the session up past the hold time; silence ends it after the hold time', async (t) => {
  const speaker = new BgpSpeaker({ asn: 64512, routerId: '192.0.2.1', listen: { port: 0, hosts: ['127.0.0.1'] } })
  await speaker.start()
  t.teardown(() => speaker.stop())
  speaker.addPeer({ name: 'bare', address: '127.0.0.2', localAddress: '127.0.0.1', peerAsn: 64512, holdTime: 3, passive: true })
  const socket = connect({ host: '127.0.0.1', port: speaker.port!, localAddress: '127.0.0.2' })
  t.teardown(() => socket.destroy())
  await once(socket, 'connect')
  const peer = bare(socket)
  const capabilities = [{ kind: 'multiprotocol' as const, afi: Afi.IPV4, safi: Safi.UNICAST }, { kind: 'four-octet-as' as const, asn: 64512 }]
  socket.write(encodeMessage(makeOpen({ asn: 64512, holdTime: 3, bgpId: '192.0.2.2', capabilities }), opts))
  await waitFor(() => peer.got.some((m) => m.msg.type === 'open') || undefined, { timeoutMs: 5000, what: "pinto's OPEN" })
  socket.write(encodeMessage(KEEPALIVE, opts))
  await waitFor(() => speaker.peerStatus().find((s) => s.name === 'bare')?.state === 'Established' || undefined, { timeoutMs: 5000, what: 'Established' })

  // Five seconds of UPDATEs and KEEPALIVEs, one every 0.6 s: well past the 3 s hold time.
  const update = packUpdates({ afi: Afi.IPV4, safi: Safi.UNICAST, attributes: { origin: 0, asPath: [], nextHop: '127.0.0.2', localPref: 100 }, announce: [ipv4Prefix(0xc6120000, 24)] }, opts)[0]!
  const started = Date.now()
  let i = 0
  let lastSent = started
  while (Date.now() - started < 5000) {
    socket.write(i++ % 2 === 0 ? update : encodeMessage(KEEPALIVE, opts))
    lastSent = Date.now()
    await new Promise((r) => setTimeout(r, 600))
  }
  t.notOk(peer.got.some((m) => m.msg.type === 'notification'), 'no NOTIFICATION while messages keep coming')
  t.equal(speaker.peerStatus().find((s) => s.name === 'bare')?.state, 'Established', 'still Established after 5 s')

  // Then silence: Hold Timer Expired about 3 s after the last message.
  const n = await waitFor(() => peer.got.find((m) => m.msg.type === 'notification'), { timeoutMs: 8000, what: 'Hold Timer Expired' })
  t.equal(n.msg.type === 'notification' && n.msg.code, ErrorCode.HOLD_TIMER_EXPIRED, 'the NOTIFICATION is Hold Timer Expired')
  const after = n.at - lastSent
  t.ok(after >= 2500 && after <= 4500, `sent ${after} ms after the last message (hold time 3 s)`)
})
