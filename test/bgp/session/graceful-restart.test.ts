// RFC 4724 as the receiving speaker, over real loopback sockets on a fake clock: a peer's connection lost
// without a NOTIFICATION leaves its routes stale for its restart time, and the peer's new connection is
// taken at once (no Idle hold); back again, they wait for its End-of-RIB at most max(120 s, restart time);
// a NOTIFICATION keeps nothing; a peer reconnecting while Established takes the session over (the old one
// counts as lost).
import t, { type Test } from 'tap'
import { Afi, CeaseSubcode, ErrorCode, KEEPALIVE, Safi, endOfRibUpdate, notification, packUpdates, parsePrefix, type Capability, type Prefix } from '../../../bgp/index.js'
import { waitFor } from '../../harness/wait.js'
import { BARE_OPTS, bareOpen, establish, speakerWithBarePeer, type BarePeer, type Harness } from './bare-peer.js'

const RESTART_TIME = 30
const gr = (restartState = false): Capability => ({
  kind: 'graceful-restart',
  restartState,
  notification: false,
  restartTime: RESTART_TIME,
  families: [{ afi: Afi.IPV4, safi: Safi.UNICAST, forwardingPreserved: true }],
})
const ROUTE = parsePrefix('198.18.0.0/26')
const OTHER = parsePrefix('198.18.0.64/26')

function announce(bare: BarePeer, ...prefixes: Prefix[]): void {
  for (const u of packUpdates({ afi: Afi.IPV4, safi: Safi.UNICAST, attributes: { origin: 0, asPath: [], nextHop: '127.0.0.2', localPref: 100 }, announce: prefixes }, BARE_OPTS)) bare.write(u)
}

const stale = (h: Harness, p: Prefix): boolean | undefined => h.speaker.rib.best(p)?.path.stale
const until = (what: string, probe: () => boolean): Promise<true> => waitFor(() => probe() || undefined, { timeoutMs: 5000, intervalMs: 2, what })

/** A session with graceful restart whose peer sent ROUTE and OTHER, then lost its connection (no NOTIFICATION). */
async function lostWithRoutes(t: Test): Promise<Harness> {
  const h = await speakerWithBarePeer(t)
  const bare = await establish(h, 0, [gr()])
  announce(bare, ROUTE, OTHER)
  await until('the routes in the RIB', () => stale(h, ROUTE) === false && stale(h, OTHER) === false)
  bare.socket.destroy()
  // No Idle hold: the restarting peer's new connection is taken as soon as it comes.
  await until('Active', () => h.status().state === 'Active')
  t.match(h.speaker.transitions.recent({ peer: 'bare', limit: 1 })[0], {
    from: 'Established',
    to: 'Active',
    event: 'TcpConnectionFails',
    reason: "connection closed: connection closed by the peer; waiting for the peer's new connection (it restarts gracefully)",
  })
  t.equal(stale(h, ROUTE), true, 'the lost session left its routes, stale')
  return h
}

t.test('the peer does not come back: its stale routes go when its restart time is over', async (t) => {
  const h = await lostWithRoutes(t)
  h.clock.advance(RESTART_TIME * 1000 - 1)
  t.equal(stale(h, ROUTE), true, 'kept until the restart time is over')
  h.clock.advance(1)
  t.equal(h.speaker.rib.best(ROUTE), undefined, 'gone at the restart time')
  t.equal(h.speaker.rib.best(OTHER), undefined)
})

t.test('the peer comes back and sends no End-of-RIB: stale routes wait max(120 s, its restart time)', async (t) => {
  const h = await lostWithRoutes(t)
  await establish(h, 0, [gr(true)])
  h.clock.advance(RESTART_TIME * 1000)
  t.equal(stale(h, ROUTE), true, 'the restart timer no longer runs once the peer is back')
  h.clock.advance(120_000 - RESTART_TIME * 1000 - 1)
  t.equal(stale(h, ROUTE), true, 'kept while End-of-RIB may still come')
  h.clock.advance(1)
  t.equal(h.speaker.rib.best(ROUTE), undefined, 'gone 120 s after the session came back')
})

t.test('the peer comes back with End-of-RIB: what it sent again stays, the rest goes at once', async (t) => {
  const h = await lostWithRoutes(t)
  const bare = await establish(h, 0, [gr(true)])
  announce(bare, ROUTE)
  await until('ROUTE refreshed', () => stale(h, ROUTE) === false)
  t.equal(stale(h, OTHER), true, 'OTHER still stale before End-of-RIB')
  bare.send(endOfRibUpdate(Afi.IPV4, Safi.UNICAST))
  await until('End-of-RIB taken', () => h.speaker.peer('bare')!.synced)
  t.equal(h.speaker.rib.best(OTHER), undefined, 'OTHER, not sent again, went with End-of-RIB')
  t.equal(stale(h, ROUTE), false, 'ROUTE stays')
})

t.test('a NOTIFICATION ends the session and its routes with it', async (t) => {
  const h = await speakerWithBarePeer(t)
  const bare = await establish(h, 0, [gr()])
  announce(bare, ROUTE)
  await until('the route in the RIB', () => stale(h, ROUTE) === false)
  bare.send(notification(ErrorCode.CEASE, CeaseSubcode.ADMINISTRATIVE_RESET))
  await until('Idle', () => h.status().state === 'Idle')
  t.equal(h.speaker.rib.best(ROUTE), undefined, 'no stale routes after a NOTIFICATION (RFC 8538 is not negotiated)')
})

t.test('the peer reconnects while Established: the new connection takes over, the old routes are stale', async (t) => {
  const h = await speakerWithBarePeer(t)
  const old = await establish(h, 0, [gr()])
  announce(old, ROUTE)
  await until('the route in the RIB', () => stale(h, ROUTE) === false)
  const fresh = await h.connect()
  fresh.send(bareOpen(0, [gr(true)]))
  await fresh.received('open')
  await fresh.received('keepalive')
  await until('the old connection closed', () => old.closed)
  t.match(h.speaker.transitions.recent({ peer: 'bare', limit: 1 })[0], {
    from: 'Established',
    to: 'OpenConfirm',
    event: 'TakeOverConnection',
    reason: /^the peer reconnected while Established \(graceful restart\)/,
  })
  t.equal(stale(h, ROUTE), true, 'the old session counts as lost: its routes are stale')
  fresh.send(KEEPALIVE)
  await until('Established on the new connection', () => h.status().state === 'Established')
  fresh.send(endOfRibUpdate(Afi.IPV4, Safi.UNICAST))
  await until('End-of-RIB taken', () => h.speaker.rib.best(ROUTE) === undefined)
  t.equal(h.status().counters.flaps, 1, 'one session lost')
})
