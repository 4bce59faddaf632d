// Two pinto speakers over real loopback sockets (127.0.0.1 and 127.0.0.2): sessions come up,
// routes flow both ways with iBGP and eBGP semantics, withdrawals and shutdown communications arrive,
// peers change without disturbing unchanged sessions.
import t from 'tap'
import { BgpSpeaker, parsePrefix, formatPrefix } from '../../bgp/index.js'
import type { PeerConfig } from '../../bgp/session/peer-config.js'
import { ACCEPT_ALL as acceptAll } from '../../bgp/policy/index.js'
import { waitFor } from '../harness/wait.js'
import { loopbackSpeakers } from './loopback-speakers.js'

interface Pair {
  a: BgpSpeaker
  b: BgpSpeaker
}

async function pair(t: Tap.Test, asA: number, asB: number, over: Partial<PeerConfig> = {}): Promise<Pair> {
  const { a, b } = await loopbackSpeakers(t, asA, asB)
  const ebgp = asA !== asB
  const policy = ebgp ? { importPolicy: acceptAll, exportPolicy: acceptAll } : {}
  a.addPeer({ name: 'b', address: '127.0.0.2', port: b.port!, localAddress: '127.0.0.1', peerAsn: asB, holdTime: 9, ...policy, ...over })
  b.addPeer({ name: 'a', address: '127.0.0.1', port: a.port!, localAddress: '127.0.0.2', peerAsn: asA, holdTime: 9, passive: true, ...policy })
  await waitFor(() => a.peerStatus()[0]?.state === 'Established' && b.peerStatus()[0]?.state === 'Established', { timeoutMs: 10_000, what: 'both sessions Established' })
  return { a, b }
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Tap {
    type Test = import('tap').Test
  }
}

const locRib = (s: BgpSpeaker): string[] => [...s.rib.locRib()].map(([p]) => formatPrefix(p)).sort()

t.test('iBGP: a route originated on one side arrives on the other and is withdrawn', async (t) => {
  const { a, b } = await pair(t, 64512, 64512)
  a.originate(parsePrefix('198.18.0.0/26'))
  const best = await waitFor(() => b.rib.best(parsePrefix('198.18.0.0/26')), { timeoutMs: 5000, what: 'route on b' })
  t.equal(best.path.attrs.attrs.nextHop, '127.0.0.1', 'next hop is the originator')
  t.same(best.path.attrs.attrs.asPath, [], 'iBGP: no AS prepended')
  t.equal(best.path.attrs.attrs.localPref, 100, 'iBGP carries LOCAL_PREF')
  a.withdraw(parsePrefix('198.18.0.0/26'))
  await waitFor(() => b.rib.best(parsePrefix('198.18.0.0/26')) === undefined, { timeoutMs: 5000, what: 'withdrawal on b' })
  const st = a.peerStatus()[0]!
  t.equal(st.type, 'ibgp')
  t.ok(st.negotiated?.fourOctetAs)
  t.ok(st.negotiated?.gracefulRestart)
  t.same(st.negotiated?.families, ['ipv4-unicast'])
})

t.test('eBGP: our AS is prepended, LOCAL_PREF stripped, next hop self', async (t) => {
  const { a, b } = await pair(t, 64512, 65001)
  a.originate(parsePrefix('198.18.1.0/26'))
  const best = await waitFor(() => b.rib.best(parsePrefix('198.18.1.0/26')), { timeoutMs: 5000, what: 'route on b' })
  t.same(best.path.attrs.attrs.asPath, [{ type: 2, asns: [64512] }])
  t.equal(best.path.attrs.attrs.localPref, undefined)
  t.equal(b.peerStatus()[0]!.type, 'ebgp')
})

t.test('IPv6 unicast over IPv4 transport, with the next hop we configure', async (t) => {
  const { a, b } = await pair(t, 64512, 64512, { families: ['ipv4', 'ipv6'], localAddress6: '2001:db8::1' })
  // b only offers IPv4, so the session negotiates IPv4 alone; re-pair with both offering IPv6.
  t.same(a.peerStatus()[0]!.negotiated?.families, ['ipv4-unicast'], 'only what both advertised')
  a.setPeers([])
  b.setPeers([])
  a.addPeer({ name: 'b6', address: '127.0.0.2', port: b.port!, localAddress: '127.0.0.1', localAddress6: '2001:db8::1', peerAsn: 64512, families: ['ipv4', 'ipv6'], holdTime: 9 })
  b.addPeer({ name: 'a6', address: '127.0.0.1', port: a.port!, localAddress: '127.0.0.2', peerAsn: 64512, families: ['ipv4', 'ipv6'], passive: true, holdTime: 9 })
  await waitFor(() => b.peerStatus()[0]?.state === 'Established', { timeoutMs: 10_000, what: 'IPv6-capable session' })
  a.originate(parsePrefix('2001:db8:1::/64'))
  const best = await waitFor(() => b.rib.best(parsePrefix('2001:db8:1::/64')), { timeoutMs: 5000, what: 'IPv6 route on b' })
  t.same(best.path.attrs.nextHop, ['2001:db8::1'])
  t.same([...b.peerStatus()[0]!.negotiated!.families].sort(), ['ipv4-unicast', 'ipv6-unicast'])
})

t.test('a shutdown communication reaches the peer', async (t) => {
  const { a, b } = await pair(t, 64512, 64512)
  a.removePeer('b', 'test')
  await waitFor(() => b.peerStatus()[0]?.state !== 'Established', { timeoutMs: 5000, what: 'b notices' })
  t.match(b.peerStatus()[0]!.lastError ?? '', /Cease \/ Peer De-configured/)
})

t.test('changing only the policy keeps the session; changing the AS resets it', async (t) => {
  const { a, b } = await pair(t, 64512, 64512)
  const base = { name: 'b', address: '127.0.0.2', port: b.port!, localAddress: '127.0.0.1', peerAsn: 64512, holdTime: 9 }
  const before = a.peerStatus()[0]!.since
  t.same(a.setPeers([{ ...base }]).unchanged, ['b'])
  t.same(a.setPeers([{ ...base, exportPolicy: acceptAll }]).updated, ['b'])
  t.equal(a.peerStatus()[0]!.state, 'Established')
  t.equal(a.peerStatus()[0]!.since, before, 'the session was not reset')
  t.same(a.setPeers([{ ...base, holdTime: 12 }]).reset, ['b'])
})

t.test('a wrong peer AS is refused with OPEN Message Error / Bad Peer AS', async (t) => {
  const { a, b } = await loopbackSpeakers(t)
  a.addPeer({ name: 'b', address: '127.0.0.2', port: b.port!, localAddress: '127.0.0.1', peerAsn: 65099 })
  b.addPeer({ name: 'a', address: '127.0.0.1', port: a.port!, localAddress: '127.0.0.2', peerAsn: 64512, passive: true })
  await waitFor(() => /Bad Peer AS/.test(b.peerStatus()[0]?.lastError ?? ''), { timeoutMs: 5000, what: 'b hears Bad Peer AS' })
  t.match(a.peerStatus()[0]!.lastError ?? '', /OPEN refused: OPEN Message Error \/ Bad Peer AS: peer AS 64512, expected 65099/)
})

t.test('a full table flows and keepalives keep the session up', async (t) => {
  const { a, b } = await pair(t, 64512, 64512)
  for (let i = 0; i < 20000; i++) a.rib.originate(parsePrefix(`10.${i >> 8}.${i & 255}.0/24`))
  a.rib.flush()
  await waitFor(() => b.rib.size >= 20000 && locRib(b).length >= 20000, { timeoutMs: 20_000, what: '20k routes on b' })
  t.equal(b.peerStatus()[0]!.state, 'Established')
  t.ok(a.peerStatus()[0]!.counters.updatesOut < 200, `packed into few UPDATEs (${a.peerStatus()[0]!.counters.updatesOut})`)
})
