// Two speakers on loopback with TCP-MD5 and GTSM: the same key Establishes (IPv4, IPv6), a changed key
// resets the session and it stays down saying so, an unreadable key never connects, and GTSM peers
// (TTL 255 both ways on loopback) come up through a passive listener.

import t from 'tap'
import type { BgpSpeaker } from '../../bgp/index.js'
import { loopbackSpeakers } from './loopback-speakers.js'
import type { PeerConfig } from '../../bgp/session/peer-config.js'
import { waitFor } from '../harness/wait.js'

const pair = (t: Tap.Test, hostA: string, hostB: string): ReturnType<typeof loopbackSpeakers> => loopbackSpeakers(t, 64512, 64512, [hostA, hostB])

const up = (s: BgpSpeaker): boolean => s.peerStatus()[0]?.state === 'Established'

/** a waits, b connects to a's port from its own address. */
function peerings(a: BgpSpeaker, b: BgpSpeaker, addrA: string, addrB: string, extra: { a?: Partial<PeerConfig>; b?: Partial<PeerConfig> }): void {
  a.setPeers([{ name: 'b', address: addrB, peerAsn: 64512, passive: true, ...extra.a }])
  b.setPeers([{ name: 'a', address: addrA, port: a.port!, localAddress: addrB, peerAsn: 64512, connectRetryTime: 1, ...extra.b }])
}

t.test('TCP-MD5 over IPv4: the same key Establishes; a changed key resets and stays down', async (t) => {
  const { a, b } = await pair(t, '127.0.0.1', '127.0.0.2')
  peerings(a, b, '127.0.0.1', '127.0.0.2', { a: { password: 'k3y' }, b: { password: 'k3y' } })
  await waitFor(() => up(a) && up(b), { timeoutMs: 10_000, what: 'keyed session Established' })
  t.same(b.peerStatus()[0]!.transport, { tcpMd5: true, ttlSecurity: 0 })
  const summary = b.setPeers([{ name: 'a', address: '127.0.0.1', port: a.port!, localAddress: '127.0.0.2', peerAsn: 64512, connectRetryTime: 1, password: 'other' }])
  t.same(summary.reset, ['a'], 'a new key is a new session')
  await waitFor(() => /timed out; TCP-MD5 keyed/.test(b.peerStatus()[0]?.lastError ?? ''), { timeoutMs: 10_000, what: 'the connect times out' })
  t.not(b.peerStatus()[0]!.state, 'Established')
  t.not(a.peerStatus()[0]!.state, 'Established')
})

t.test('TCP-MD5 over IPv6', async (t) => {
  const { a, b } = await pair(t, '::1', '::1')
  peerings(a, b, '::1', '::1', { a: { password: 'k3y6', families: ['ipv6'] }, b: { password: 'k3y6', families: ['ipv6'] } })
  await waitFor(() => up(a) && up(b), { timeoutMs: 10_000, what: 'keyed IPv6 session Established' })
  t.pass('Established')
})

t.test('a listener keyed for a peer lets no unkeyed connection in', async (t) => {
  const { a, b } = await pair(t, '127.0.0.1', '127.0.0.2')
  peerings(a, b, '127.0.0.1', '127.0.0.2', { a: { password: 'k3y' } })
  await waitFor(() => /timed out$/.test(b.peerStatus()[0]?.lastError ?? ''), { timeoutMs: 10_000, what: 'the unkeyed connect times out' })
  t.equal(a.peerStatus()[0]!.state, 'Active')
})

t.test('a peer whose key cannot be had never connects and says why', async (t) => {
  const { a, b } = await pair(t, '127.0.0.1', '127.0.0.2')
  const why = 'BGPPeer a: spec.password.secretKeyRef: /nowhere/s/k does not exist'
  peerings(a, b, '127.0.0.1', '127.0.0.2', { b: { transportError: why } })
  await waitFor(() => b.peerStatus()[0]?.lastError === `cannot open the connection: ${why}`, { timeoutMs: 5000, what: 'the error in the status' })
  t.equal(a.peerStatus()[0]!.state, 'Active', 'nothing reached the other side')
})

t.test('GTSM both ways through a passive listener', async (t) => {
  const { a, b } = await pair(t, '127.0.0.1', '127.0.0.2')
  peerings(a, b, '127.0.0.1', '127.0.0.2', { a: { ttlSecurity: 1, password: 'k' }, b: { ttlSecurity: 1, password: 'k' } })
  await waitFor(() => up(a) && up(b), { timeoutMs: 10_000, what: 'GTSM session Established' })
  t.same(a.peerStatus()[0]!.transport, { tcpMd5: true, ttlSecurity: 1 })
})
