// The peers controller's policies: a peer whose BGPFilters did not change (whatever the order their
// fields come in from the datastore) keeps the very same policy objects, so the speaker leaves its session
// and tables alone; a changed filter or pool list compiles anew; a missing filter leaves the peer out.

import t from 'tap'
import { pino } from 'pino'
import type { BGPFilter, IPPool } from '../../../config/index.js'
import type { DesiredPeer } from '../../../agent/bgp-peers.js'
import { PeerPolicies, type PeerInputs } from '../../../agent/controllers/peer-policies.js'
import { AnnouncementRefusals } from '../../../agent/refusals.js'

const peer = (filters: readonly string[]): DesiredPeer => ({
  name: 'tor', kind: 'global', address: '192.0.2.1', port: 179, family: 'ipv4', peerAsn: 65000, localAsn: 64512, localAddress: undefined,
  passive: false, rrClient: false, nextHopMode: 'auto', allowLocalAs: 0, restartTime: undefined, keepaliveTime: undefined, filters, ttlSecurity: 0,
})
const filter = (spec: BGPFilter['spec']): BGPFilter => ({ apiVersion: 'projectcalico.org/v3', kind: 'BGPFilter', metadata: { name: 'f' }, spec })
const pool = (cidr: string): IPPool => ({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: cidr }, spec: { cidr } })
const inputs = (f: BGPFilter, pools = [pool('198.18.0.0/16')]): PeerInputs => ({ filters: new Map([['f', f]]), pools, services: [], localAddress6: undefined, restartTime: 120 })

t.test('policies are kept by content', async (t) => {
  const policies = new PeerPolicies(new AnnouncementRefusals(pino({ level: 'silent' })))
  const nothing = { password: undefined }
  const a = policies.configFor(peer(['f']), inputs(filter({ importV4: [{ action: 'Reject', matchOperator: 'In', cidr: '10.0.0.0/8' }] })), false, nothing)
  const b = policies.configFor(peer(['f']), inputs(filter({ importV4: [{ cidr: '10.0.0.0/8', matchOperator: 'In', action: 'Reject' }] })), false, nothing)
  t.equal(b.importPolicy, a.importPolicy, 'the same filter with its fields in another order: the same import policy')
  t.equal(b.exportPolicy, a.exportPolicy, 'and the same export policy')
  const c = policies.configFor(peer(['f']), inputs(filter({ importV4: [{ action: 'Reject', matchOperator: 'In', cidr: '10.1.0.0/16' }] })), false, nothing)
  t.not(c.importPolicy, a.importPolicy, 'a changed rule: a new import policy')
  const d = policies.configFor(peer(['f']), inputs(filter({ importV4: [{ action: 'Reject', matchOperator: 'In', cidr: '10.0.0.0/8' }] }), [pool('198.19.0.0/16')]), false, nothing)
  t.not(d.importPolicy, a.importPolicy, 'another pool: a new pool guard')
  t.not(d.exportPolicy, a.exportPolicy, 'and a new export allow-list')
  const node = policies.configFor(peer(['f']), inputs(filter({ importV4: [{ action: 'Reject', matchOperator: 'In', cidr: '10.0.0.0/8' }] })), true, nothing)
  t.not(node.importPolicy, a.importPolicy, 'a node peer: no pool guard')
  t.throws(() => policies.configFor(peer(['missing']), inputs(filter({})), false, nothing), /BGPFilter missing does not exist/)
  t.match(policies.configFor(peer([]), inputs(filter({})), false, { error: 'no secret' }), { transportError: 'no secret', restartTime: 120 }, 'a password error travels to the session')
})
