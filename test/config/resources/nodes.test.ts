// nodeAddressNames: each node's BGP addresses, without their prefix length, to the node's name.
import t from 'tap'
import { nodeAddressNames, type Node } from '../../../config/index.js'

const node = (name: string, bgp?: Node['spec']['bgp']): Node => ({ apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name }, spec: bgp === undefined ? {} : { bgp } })

t.test('both families, the length dropped; a node without BGP addresses names none', async (t) => {
  const names = nodeAddressNames([
    node('a', { ipv4Address: '192.0.2.1/24', ipv6Address: '2001:db8::1/64' }),
    node('b', { ipv4Address: '192.0.2.2/24' }),
    node('c'),
    node('d', { ipv6Address: '2001:db8::4/64' }),
  ])
  t.same([...names], [
    ['192.0.2.1', 'a'],
    ['2001:db8::1', 'a'],
    ['192.0.2.2', 'b'],
    ['2001:db8::4', 'd'],
  ])
})

t.test('an address two nodes claim is the later one', async (t) => {
  const names = nodeAddressNames([node('a', { ipv4Address: '192.0.2.1/24' }), node('b', { ipv4Address: '192.0.2.1/32' })])
  t.equal(names.get('192.0.2.1'), 'b')
  t.equal(names.size, 1)
})
