// RFC 4760 §7 and RFC 7606 §7.11 over a real session with the speaker pinto-node runs: a malformed
// MP_REACH_NLRI / MP_UNREACH_NLRI deletes the peer's routes of the family it names, and that family is
// ignored for the rest of the session; the session's other families, and the rest of the UPDATE, stay.
// The peer's status counts it and names the family. A session reset for an MP attribute sends 3/9 with it.
import t, { type Test } from 'tap'
import { Afi, Safi, packUpdates, parsePrefix, type Capability, type Prefix } from '../../bgp/index.js'
import type { AfiSafiName } from '../../bgp/session/peer-config.js'
import { waitFor } from '../harness/wait.js'
import { BARE_OPTS, establish, speakerWithBarePeer, taken, type BarePeer, type Harness } from './session/bare-peer.js'
import { BAD_IPV4_MP, BAD_IPV6_MP } from './bad-mp.js'
import { updateBytes } from './codec/hex.js'

const IPV6_CAP: Capability = { kind: 'multiprotocol', afi: Afi.IPV6, safi: Safi.UNICAST }
const V4 = ['198.19.1.0/24', '198.19.2.0/24', '198.19.3.0/24'].map(parsePrefix)
const V6 = ['2001:db8:f1::/48', '2001:db8:f2::/48'].map(parsePrefix)
const V4_NEXT_HOP = '192.0.2.2'
const V6_NEXT_HOP = '2001:db8::2'

function announce4(bare: BarePeer, ...prefixes: Prefix[]): void {
  for (const u of packUpdates({ afi: Afi.IPV4, safi: Safi.UNICAST, attributes: { origin: 0, asPath: [], nextHop: V4_NEXT_HOP }, announce: prefixes }, BARE_OPTS)) bare.write(u)
}

function announce6(bare: BarePeer, ...prefixes: Prefix[]): void {
  for (const u of packUpdates({ afi: Afi.IPV6, safi: Safi.UNICAST, attributes: { origin: 0, asPath: [] }, nextHop: [V6_NEXT_HOP], announce: prefixes }, BARE_OPTS)) bare.write(u)
}

const held = (h: Harness, p: Prefix): boolean => h.speaker.rib.best(p) !== undefined
const until = (what: string, probe: () => boolean): Promise<true> => waitFor(() => probe() || undefined, { timeoutMs: 5000, intervalMs: 2, what })

/** A session of `families` (the bare side offers IPv4, and IPv6 when asked) holding V4, and V6 when IPv6 is negotiated. */
async function sessionWithRoutes(t: Test, families: readonly AfiSafiName[]): Promise<{ h: Harness; bare: BarePeer }> {
  const h = await speakerWithBarePeer(t, { families })
  const bare = await establish(h, 0, [IPV6_CAP])
  announce4(bare, ...V4)
  if (families.includes('ipv6')) announce6(bare, ...V6)
  await until('the routes in the RIB', () => V4.every((p) => held(h, p)) && (!families.includes('ipv6') || V6.every((p) => held(h, p))))
  return { h, bare }
}

/**
 * After `disabled` went: a later announcement of it is ignored, one of the other family is taken (sent after
 * it, so the barrier), and the session stays up.
 */
async function laterIgnored(t: Test, h: Harness, bare: BarePeer, disabled: AfiSafiName): Promise<void> {
  const later = { ipv4: parsePrefix('198.19.4.0/24'), ipv6: parsePrefix('2001:db8:f3::/48') }
  const send = { ipv4: announce4, ipv6: announce6 }
  const other: AfiSafiName = disabled === 'ipv4' ? 'ipv6' : 'ipv4'
  send[disabled](bare, later[disabled])
  send[other](bare, later[other])
  await until(`the later ${other} route`, () => held(h, later[other]))
  t.notOk(held(h, later[disabled]), `a later ${disabled} announcement is ignored`)
  t.equal(h.status().state, 'Established')
}

/** Sends `bytes` and waits until the speaker has taken them in. */
async function sendTaken(h: Harness, bare: BarePeer, bytes: Uint8Array): Promise<void> {
  const before = h.status().counters.messagesIn
  bare.write(bytes)
  await taken(h, before + 1)
}

for (const [name, bytes] of Object.entries(BAD_IPV6_MP)) {
  t.test(`IPv4 and IPv6 negotiated, ${name}: the IPv6 routes go, the IPv4 routes and the session stay`, async (t) => {
    const { h, bare } = await sessionWithRoutes(t, ['ipv4', 'ipv6'])
    t.equal(h.status().prefixesAccepted, 5)
    await sendTaken(h, bare, bytes)
    t.notOk(V6.some((p) => held(h, p)), 'every IPv6 route of the peer is gone')
    t.ok(V4.every((p) => held(h, p)), 'every IPv4 route stays')
    const s = h.status()
    t.equal(s.state, 'Established')
    t.equal(s.prefixesAccepted, 3)
    t.equal(s.prefixesReceived, 5, 'what the session received is still counted')
    t.equal(s.importTable, 3, 'the routes kept before import policy (no route refresh) lose the IPv6 ones only')
    t.same(s.disabledFamilies, ['ipv6-unicast'])
    t.same(s.refused, { 'afi-safi-disable': 1 })
    t.match(s.lastError, /malformed UPDATE for ipv6-unicast \(its routes deleted, the family ignored for the rest of this session\)/)

    await laterIgnored(t, h, bare, 'ipv6')
  })
}

for (const [name, bytes] of Object.entries(BAD_IPV6_MP)) {
  t.test(`only IPv4 negotiated, ${name}: nothing goes (the finding's case)`, async (t) => {
    const { h, bare } = await sessionWithRoutes(t, ['ipv4'])
    await sendTaken(h, bare, bytes)
    t.ok(V4.every((p) => held(h, p)), 'every IPv4 route stays')
    const s = h.status()
    t.equal(s.state, 'Established')
    t.equal(s.prefixesReceived, 3)
    t.equal(s.prefixesAccepted, 3)
    t.same(s.disabledFamilies, [], 'IPv6 was never taken: nothing to disable')
    t.same(s.refused, { 'afi-safi-disable': 1 }, 'counted all the same')
    t.match(s.lastError, /malformed UPDATE for ipv6-unicast \(not negotiated, nothing to delete\)/)
  })
}

t.test('the rest of the UPDATE stands: IPv4 NLRI beside a malformed IPv6 MP_UNREACH_NLRI are taken', async (t) => {
  const { h, bare } = await sessionWithRoutes(t, ['ipv4', 'ipv6'])
  const beside = parsePrefix('198.19.5.0/24')
  await sendTaken(h, bare, updateBytes({ attrs: '40 01 01 00  40 02 00  40 03 04 c0000202  80 0f 05 0002 01 40 20', nlri: '18 c61305' }))
  t.ok(held(h, beside), '198.19.5.0/24 announced in the same UPDATE is in the RIB')
  t.notOk(V6.some((p) => held(h, p)), 'the IPv6 routes are gone')
  t.same(h.status().disabledFamilies, ['ipv6-unicast'])
})

t.test('the rest of the UPDATE stands: its own treat-as-withdraw still applies beside a family error', async (t) => {
  const { h, bare } = await sessionWithRoutes(t, ['ipv4', 'ipv6'])
  // ORIGIN 3 makes the UPDATE's IPv4 NLRI withdrawn (RFC 7606 §7.1); the IPv6 MP_UNREACH_NLRI is malformed.
  await sendTaken(h, bare, updateBytes({ attrs: '40 01 01 03  40 02 00  40 03 04 c0000202  80 0f 05 0002 01 40 20', nlri: '18 c61301' }))
  t.notOk(held(h, V4[0]!), '198.19.1.0/24, re-announced with a bad ORIGIN, is withdrawn')
  t.ok(held(h, V4[1]!) && held(h, V4[2]!), 'the other IPv4 routes stay')
  t.notOk(V6.some((p) => held(h, p)), 'the IPv6 routes are gone')
  t.same(h.status().refused, { 'afi-safi-disable': 1, 'treat-as-withdraw': 1 })
})

t.test('a malformed IPv4 MP_UNREACH_NLRI on a session of both families disables IPv4 only', async (t) => {
  const { h, bare } = await sessionWithRoutes(t, ['ipv4', 'ipv6'])
  await sendTaken(h, bare, BAD_IPV4_MP['MP_UNREACH_NLRI with a /33']!)
  t.notOk(V4.some((p) => held(h, p)), 'the IPv4 routes are gone')
  t.ok(V6.every((p) => held(h, p)), 'the IPv6 routes stay')
  t.same(h.status().disabledFamilies, ['ipv4-unicast'])
  await laterIgnored(t, h, bare, 'ipv4')
})

t.test('an MP_REACH_NLRI too short for its AFI/SAFI resets the session with 3/9 carrying the attribute', async (t) => {
  const { h, bare } = await sessionWithRoutes(t, ['ipv4', 'ipv6'])
  bare.write(updateBytes({ attrs: '80 0e 02 0002' }))
  const n = await bare.received('notification')
  t.same(n.type === 'notification' ? { code: n.code, subcode: n.subcode, data: Buffer.from(n.data).toString('hex') } : n, { code: 3, subcode: 9, data: '800e020002' })
  await until('the session down', () => h.status().state !== 'Established')
})
