// The RFC 4271 §8 state machine, driven event by event: the next state, the actions, and the
// NOTIFICATION sent for each error, with no sockets and no clock.
import t from 'tap'
import { makeOpen, type Capability, type OpenMessage } from '../../../bgp/index.js'
import { initialState, step, type FsmAction, type FsmConfig, type FsmEvent, type FsmState } from '../../../bgp/session/fsm.js'

const caps: Capability[] = [
  { kind: 'multiprotocol', afi: 1, safi: 1 },
  { kind: 'route-refresh' },
  { kind: 'four-octet-as', asn: 65001 },
  { kind: 'graceful-restart', restartState: false, notification: false, restartTime: 120, families: [{ afi: 1, safi: 1, forwardingPreserved: true }] },
]
const localOpen = makeOpen({ asn: 65001, holdTime: 90, bgpId: '192.0.2.1', capabilities: caps })
const config = (over: Partial<FsmConfig> = {}): FsmConfig => ({
  passive: false,
  connectRetryTime: 5,
  openHoldTime: 240,
  delayOpenTime: 0,
  idleHoldMin: 5,
  idleHoldMax: 30,
  expect: { peerAsn: 65002, localAsn: 65001, localRouterId: '192.0.2.1', holdTime: 90 },
  localOpen,
  ...over,
})
const peerOpen = (over: Partial<OpenMessage> = {}): OpenMessage => ({
  ...makeOpen({ asn: 65002, holdTime: 30, bgpId: '192.0.2.2', capabilities: [{ kind: 'multiprotocol', afi: 1, safi: 1 }, { kind: 'four-octet-as', asn: 65002 }] }),
  ...over,
})

function run(events: FsmEvent[], cfg = config()): { state: FsmState; actions: FsmAction[][] } {
  let state = initialState(cfg)
  const actions: FsmAction[][] = []
  for (const e of events) {
    const r = step(state, e, cfg)
    state = r.state
    actions.push([...r.actions])
  }
  return { state, actions }
}

const sent = (actions: FsmAction[]): string[] =>
  actions.flatMap((a) => (a.type === 'send' ? [a.message.type === 'notification' ? `notification ${a.message.code}/${a.message.subcode}` : a.message.type] : []))
const timers = (actions: FsmAction[]): Record<string, number> =>
  Object.fromEntries(actions.flatMap((a) => (a.type === 'timer' ? [[a.timer, a.seconds]] : [])))

const toEstablished: FsmEvent[] = [{ type: 'ManualStart' }, { type: 'TcpConnectionConfirmed' }, { type: 'BGPOpen', open: peerOpen() }, { type: 'KeepAliveMsg' }]

t.test('active start: Connect, OpenSent, OpenConfirm, Established', async (t) => {
  const { state, actions } = run(toEstablished)
  t.equal(state.name, 'Established')
  t.same(actions[0]!.map((a) => a.type), ['timer', 'connect'], 'ManualStart connects and starts ConnectRetry')
  t.same(sent(actions[1]!), ['open'], 'our OPEN once TCP is up')
  t.equal(timers(actions[1]!).Hold, 240, 'the large hold time while waiting for the OPEN')
  t.same(sent(actions[2]!), ['keepalive'], 'a KEEPALIVE answers a good OPEN')
  t.same(timers(actions[2]!), { ConnectRetry: 0, DelayOpen: 0, Hold: 30, Keepalive: 10 }, 'hold time is the smaller of the two, keepalive a third')
  t.ok(actions[3]!.some((a) => a.type === 'established'))
  t.equal(state.session?.holdTime, 30)
})

t.test('passive start waits in Active and never connects', async (t) => {
  const { state, actions } = run([{ type: 'ManualStart' }, { type: 'ConnectRetryTimer_Expires' }], config({ passive: true }))
  t.equal(state.name, 'Active')
  t.notOk(actions.flat().some((a) => a.type === 'connect'))
})

t.test('connect retry: a failed connection goes to Active and retries from Connect', async (t) => {
  const { state, actions } = run([{ type: 'ManualStart' }, { type: 'TcpConnectionFails', reason: 'refused' }, { type: 'ConnectRetryTimer_Expires' }])
  t.equal(state.name, 'Connect')
  t.ok(actions[2]!.some((a) => a.type === 'connect'))
})

t.test('DelayOpen: OPEN waits for the timer, or answers the peer OPEN at once', async (t) => {
  const cfg = config({ delayOpenTime: 3 })
  const a = run([{ type: 'ManualStart' }, { type: 'TcpConnectionConfirmed' }], cfg)
  t.equal(a.state.name, 'Connect')
  t.equal(timers(a.actions[1]!).DelayOpen, 3)
  t.same(sent(a.actions[1]!), [])
  const b = run([{ type: 'ManualStart' }, { type: 'TcpConnectionConfirmed' }, { type: 'DelayOpenTimer_Expires' }], cfg)
  t.equal(b.state.name, 'OpenSent')
  const c = run([{ type: 'ManualStart' }, { type: 'TcpConnectionConfirmed' }, { type: 'BGPOpen', open: peerOpen() }], cfg)
  t.equal(c.state.name, 'OpenConfirm')
  t.same(sent(c.actions[2]!), ['open', 'keepalive'])
})

const refusals: [string, Partial<OpenMessage>, string][] = [
  ['wrong peer AS', { myAs: 65009, capabilities: [{ kind: 'four-octet-as', asn: 65009 }] }, 'notification 2/2'],
  ['our own BGP identifier', { bgpId: '192.0.2.1' }, 'notification 2/3'],
  ['My AS disagreeing with the 4-octet AS capability', { myAs: 65003 }, 'notification 2/2'],
]
for (const [name, over, want] of refusals) {
  t.test(`an OPEN with ${name} is refused with ${want}`, async (t) => {
    const { state, actions } = run([{ type: 'ManualStart' }, { type: 'TcpConnectionConfirmed' }, { type: 'BGPOpen', open: peerOpen(over) }])
    t.equal(state.name, 'Idle')
    t.same(sent(actions[2]!), [want])
    t.ok(actions[2]!.some((a) => a.type === 'drop'))
    t.equal(timers(actions[2]!).IdleHold, 5, 'restarts after the idle hold')
  })
}

t.test('hold time 0 from the peer: no hold timer, no keepalives', async (t) => {
  const { state, actions } = run([{ type: 'ManualStart' }, { type: 'TcpConnectionConfirmed' }, { type: 'BGPOpen', open: peerOpen({ holdTime: 0 }) }])
  t.equal(state.session?.holdTime, 0)
  t.same(timers(actions[2]!), { ConnectRetry: 0, DelayOpen: 0, Hold: 0, Keepalive: 0 })
})

const unexpected: [string, FsmEvent[], FsmEvent, string][] = [
  ['UPDATE in OpenSent', toEstablished.slice(0, 2), { type: 'UpdateMsg' }, 'notification 5/1'],
  ['KEEPALIVE in OpenSent', toEstablished.slice(0, 2), { type: 'KeepAliveMsg' }, 'notification 5/1'],
  ['UPDATE in OpenConfirm', toEstablished.slice(0, 3), { type: 'UpdateMsg' }, 'notification 5/2'],
  ['OPEN in OpenConfirm', toEstablished.slice(0, 3), { type: 'BGPOpen', open: peerOpen() }, 'notification 5/2'],
  ['OPEN in Established', toEstablished, { type: 'BGPOpen', open: peerOpen() }, 'notification 5/3'],
  ['hold timer in OpenSent', toEstablished.slice(0, 2), { type: 'HoldTimer_Expires' }, 'notification 4/0'],
  ['hold timer in Established', toEstablished, { type: 'HoldTimer_Expires' }, 'notification 4/0'],
  ['send hold timer in Established (RFC 9687)', toEstablished, { type: 'SendHoldTimer_Expires' }, 'notification 8/0'],
  ['collision dump in OpenConfirm', toEstablished.slice(0, 3), { type: 'OpenCollisionDump' }, 'notification 6/7'],
  ['manual stop in Established', toEstablished, { type: 'ManualStop' }, 'notification 6/2'],
]
for (const [name, before, event, want] of unexpected) {
  t.test(`${name}: ${want} and Idle`, async (t) => {
    const { state, actions } = run([...before, event])
    t.equal(state.name, 'Idle')
    t.same(sent(actions.at(-1)!), [want])
    t.ok(actions.at(-1)!.some((a) => a.type === 'down'))
  })
}

t.test('idle hold doubles after each error up to the maximum, and resets once Established', async (t) => {
  let events: FsmEvent[] = [{ type: 'ManualStart' }]
  for (let i = 0; i < 4; i++) events = [...events, { type: 'TcpConnectionConfirmed' }, { type: 'HoldTimer_Expires' }, { type: 'IdleHoldTimer_Expires' }]
  const { actions } = run(events)
  const holds = actions.flatMap((a) => a.flatMap((x) => (x.type === 'timer' && x.timer === 'IdleHold' && x.seconds > 0 ? [x.seconds] : [])))
  t.same(holds, [5, 10, 20, 30])
  const after = run([...events, { type: 'TcpConnectionConfirmed' }, { type: 'BGPOpen', open: peerOpen() }, { type: 'KeepAliveMsg' }])
  t.equal(after.state.idleHoldTime, 5)
})

t.test('manual stop leaves Idle without an automatic restart', async (t) => {
  const { state, actions } = run([...toEstablished, { type: 'ManualStop' }])
  t.equal(state.name, 'Idle')
  t.equal(timers(actions.at(-1)!).IdleHold, 0)
})

t.test('a NOTIFICATION from the peer ends the session without answering', async (t) => {
  const { state, actions } = run([...toEstablished, { type: 'NotifMsg', notification: { type: 'notification', code: 6, subcode: 2, data: new Uint8Array(0) } }])
  t.equal(state.name, 'Idle')
  t.same(sent(actions.at(-1)!), [])
  t.match(state.reason, /NOTIFICATION received: Cease \/ Administrative Shutdown/)
})

t.test('keepalive timer sends a KEEPALIVE and restarts; UPDATEs restart the hold timer', async (t) => {
  const { actions } = run([...toEstablished, { type: 'KeepaliveTimer_Expires' }, { type: 'UpdateMsg' }])
  t.same(sent(actions.at(-2)!), ['keepalive'])
  t.equal(timers(actions.at(-2)!).Keepalive, 10)
  t.equal(timers(actions.at(-1)!).Hold, 30)
})

t.test('every transition records a reason', async (t) => {
  let state = initialState(config())
  for (const e of toEstablished) {
    const next = step(state, e, config()).state
    if (next.name !== state.name) t.ok(next.reason.length > 0, `${state.name} -> ${next.name}: ${next.reason}`)
    state = next
  }
})

t.test('a stop names its cause; a graceful stop sends no NOTIFICATION; both are local stops', async (t) => {
  const bfd = run([...toEstablished, { type: 'ManualStop', reason: 'BFD down: path failed', notification: { type: 'notification', code: 6, subcode: 10, data: new Uint8Array(0) } }])
  t.equal(bfd.state.reason, 'BFD down: path failed: sent Cease / BFD Down (code 6, subcode 10)')
  t.same(sent(bfd.actions.at(-1)!), ['notification 6/10'])
  const graceful = run([...toEstablished, { type: 'ManualStop', graceful: true, reason: 'restarting' }])
  t.equal(graceful.state.name, 'Idle')
  t.same(sent(graceful.actions.at(-1)!), [], 'no NOTIFICATION: the peer keeps our routes (RFC 4724 §4.2)')
  t.match(graceful.state.reason, /^restarting: closed without NOTIFICATION/)
  for (const r of [bfd, graceful]) t.match(r.actions.at(-1)!.find((a) => a.type === 'down'), { localStop: true })
  const lost = run([...toEstablished, { type: 'TcpConnectionFails', reason: 'reset' }])
  t.notOk(lost.actions.at(-1)!.some((a) => a.type === 'down' && a.localStop), 'a lost connection is not a local stop')
  t.equal(run([{ type: 'ManualStart', reason: 'BFD is up again' }]).state.reason, 'BFD is up again')
})

t.test('a lost connection: an Idle hold, or straight back to Connect when the peer restarts gracefully', async (t) => {
  const grCap = { kind: 'graceful-restart' as const, restartState: false, notification: false, restartTime: 120 }
  const cases: { name: string; peerCaps: OpenMessage['capabilities']; passive: boolean; state: string; idleHold: number; connects: boolean }[] = [
    { name: 'no graceful restart', peerCaps: [], passive: false, state: 'Idle', idleHold: 5, connects: false },
    { name: 'graceful restart, no family kept', peerCaps: [{ ...grCap, families: [] }], passive: false, state: 'Idle', idleHold: 5, connects: false },
    { name: 'graceful restart for IPv4 unicast', peerCaps: [{ ...grCap, families: [{ afi: 1, safi: 1, forwardingPreserved: true }] }], passive: false, state: 'Connect', idleHold: 0, connects: true },
    { name: 'the same, passive', peerCaps: [{ ...grCap, families: [{ afi: 1, safi: 1, forwardingPreserved: false }] }], passive: true, state: 'Active', idleHold: 0, connects: false },
  ]
  for (const c of cases) {
    const open = peerOpen()
    const withCaps = peerOpen({ capabilities: [...open.capabilities, ...c.peerCaps] })
    const events: FsmEvent[] = [{ type: 'ManualStart' }, { type: 'TcpConnectionConfirmed' }, { type: 'BGPOpen', open: withCaps }, { type: 'KeepAliveMsg' }]
    const { state, actions } = run([...events, { type: 'TcpConnectionFails', reason: 'reset' }], config({ passive: c.passive }))
    const last = actions.at(-1)!
    t.equal(state.name, c.state, `${c.name}: ${c.state}`)
    t.equal(timers(last).IdleHold, c.idleHold, `${c.name}: Idle hold ${c.idleHold} s`)
    t.equal(last.some((a) => a.type === 'connect'), c.connects, `${c.name}: ${c.connects ? 'connects again at once' : 'no connect now'}`)
    t.ok(last.some((a) => a.type === 'down' && !a.localStop), `${c.name}: the session went down (not a local stop)`)
    if (c.connects) t.ok(last.findIndex((a) => a.type === 'down') < last.findIndex((a) => a.type === 'connect'), `${c.name}: down before the new connect`)
  }
  const restarting = run([...toEstablished.slice(0, 2), { type: 'BGPOpen', open: peerOpen({ capabilities: [...peerOpen().capabilities, { ...grCap, families: [{ afi: 1, safi: 1, forwardingPreserved: true }] }] }) }, { type: 'KeepAliveMsg' }, { type: 'TcpConnectionFails', reason: 'reset' }, { type: 'TcpConnectionConfirmed' }])
  t.equal(restarting.state.name, 'OpenSent', "the restarting peer's new connection is taken: OPEN sent")
})

t.test('TakeOverConnection: the old connection goes with a Cease, the new one answers its OPEN', async (t) => {
  const { state, actions } = run([...toEstablished.slice(0, 2), { type: 'TakeOverConnection', open: peerOpen(), reason: 'connection collision: the incoming connection wins (§6.8)' }])
  const a = actions.at(-1)!
  t.equal(state.name, 'OpenConfirm')
  t.match(state.reason, /^connection collision: the incoming connection wins \(§6\.8\); OPEN from 192\.0\.2\.2/)
  t.same(sent(a), ['notification 6/7', 'open', 'keepalive'], 'Cease / Connection Collision Resolution on the old one, then OPEN and KEEPALIVE on the new')
  const order = a.map((x) => x.type)
  t.ok(order.indexOf('drop') < order.indexOf('adopt') && order.indexOf('adopt') < order.lastIndexOf('send'), 'dropped, adopted, then answered')
  t.equal(timers(a).IdleHold, 0, 'no Idle hold in between')
  const gr = run([...toEstablished, { type: 'TakeOverConnection', open: peerOpen(), reason: 'the peer reconnected' }])
  t.equal(gr.state.name, 'OpenConfirm')
  t.same(sent(gr.actions.at(-1)!), ['open', 'keepalive'], 'from Established (graceful restart) the old connection just goes')
  t.match(gr.actions.at(-1)!.find((x) => x.type === 'down'), { reason: 'the peer reconnected' })
})
