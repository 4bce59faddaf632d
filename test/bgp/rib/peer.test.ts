// The RIB's view of a session (ribPeerFor) reads its policies through to the live configuration, and a copy
// with overrides (ribPeerWith) keeps them as they are when it is made: an update group's out and an RFC 7606
// family-down copy depend on both.
import t from 'tap'
import { ribPeerWith, type Policy } from '../../../bgp/rib/types.js'
import { resolvePeerConfig, ribPeerFor, type ResolvedPeerConfig } from '../../../bgp/session/peer-config.js'
import { negotiated } from './helpers.js'

const SESSION = negotiated({ routeRefresh: false })

/** A policy that changes nothing; each call makes a distinct one. */
const policy = (): Policy => ({ apply: (_p, attrs) => attrs, empty: false })

t.test('policies read through to the live configuration; a copy keeps them as they were', async (t) => {
  const first = policy()
  let live: ResolvedPeerConfig = resolvePeerConfig({ name: 'rr-client', address: '192.0.2.1', peerAsn: 64512, exportPolicy: first, importPolicy: first }, 64512)
  const peer = ribPeerFor(() => live, SESSION, 7, '192.0.2.9')
  t.equal(peer.exportPolicy, first)
  t.equal(peer.localAddress, '192.0.2.9', 'the socket address stands in for an unset local address')
  t.equal(peer.type, 'ibgp')
  t.equal(peer.importTable, true, 'no route refresh: a pre-policy table is kept')

  const copy = ribPeerWith(peer, { id: 99, name: 'update group 99' })
  t.equal(copy.id, 99)
  t.equal(copy.name, 'update group 99')
  t.equal(copy.exportPolicy, first, 'the copy has the export policy, which a spread of the view would drop')
  t.equal(copy.importPolicy, first)
  for (const k of ['address', 'localAddress', 'asn', 'localAsn', 'type', 'rrClient', 'nextHopMode', 'allowLocalAs', 'families', 'addPathSend', 'importTable', 'encoding'] as const) {
    t.equal(copy[k], peer[k], `${k} copied`)
  }

  const second = policy()
  live = { ...live, exportPolicy: second }
  t.equal(peer.exportPolicy, second, 'the view follows a policy change')
  t.equal(copy.exportPolicy, first, 'the copy keeps the policy it was made with')
})

t.test('peers with equal encodings share one string', async (t) => {
  const live = resolvePeerConfig({ name: 'a', address: '192.0.2.1', peerAsn: 64512 }, 64512)
  const a = ribPeerFor(() => live, SESSION, 1, undefined)
  const b = ribPeerFor(() => live, { ...SESSION, addPathSend: new Set() }, 2, undefined)
  t.equal(a.encoding, b.encoding)
  t.not(ribPeerFor(() => live, { ...SESSION, as4: false }, 3, undefined).encoding, a.encoding, 'a 2-octet session encodes apart')
})
