// Which node a block is routed to when more than one node announces it: the one holding its affinity in
// the datastore; the others are reported as conflicts, and our own blocks are never routed elsewhere.
import t from 'tap'
import { preferAffineNodes, type NextHop } from '../../felix/block-owners.js'

const hop = (node: string, address: string): NextHop => ({ address, nodeName: node })
const A = hop('a', '192.0.2.11')
const B = hop('b', '192.0.2.12')
const TOR: NextHop = { address: '192.0.2.1' }

t.test('the affine node wins; the other announcers are flagged', async (t) => {
  const owners = new Map([['198.18.0.0/26', 'a'], ['198.18.0.64/26', 'b'], ['198.18.0.128/26', 'me']])
  const paths: Record<string, NextHop[]> = {
    '198.18.0.0/26': [A, B],
    '198.18.0.64/26': [A],
    '198.18.0.128/26': [B],
    '198.18.1.0/24': [TOR],
    '198.18.0.192/26': [A],
  }
  const routes = [
    { prefix: '198.18.0.0/26', nextHops: [B, A] },
    { prefix: '198.18.0.64/26', nextHops: [A] },
    { prefix: '198.18.0.128/26', nextHops: [B] },
    { prefix: '198.18.1.0/24', nextHops: [TOR] },
    { prefix: '198.18.0.192/26', nextHops: [A] },
  ]
  const { routes: out, conflicts } = preferAffineNodes(routes, owners, (p) => paths[p] ?? [], 'me')
  t.same(out, [
    { prefix: '198.18.0.0/26', nextHops: [A] },
    // b holds the affinity but does not announce it: a's path is all there is.
    { prefix: '198.18.0.64/26', nextHops: [A] },
    { prefix: '198.18.1.0/24', nextHops: [TOR] },
    // No affinity known (a block being claimed, or not a block): as learned.
    { prefix: '198.18.0.192/26', nextHops: [A] },
  ])
  t.same(conflicts, [
    { block: '198.18.0.0/26', affineNode: 'a', announcedBy: ['b'] },
    { block: '198.18.0.64/26', affineNode: 'b', announcedBy: ['a'] },
    { block: '198.18.0.128/26', affineNode: 'me', announcedBy: ['b'] },
  ])
})

t.test('our own block announced by another node is flagged even when it is not a learned best route', async (t) => {
  const owners = new Map([['198.18.0.128/26', 'me']])
  const { routes, conflicts } = preferAffineNodes([], owners, (p) => (p === '198.18.0.128/26' ? [B] : []), 'me')
  t.same(routes, [])
  t.same(conflicts, [{ block: '198.18.0.128/26', affineNode: 'me', announcedBy: ['b'] }])
  t.same(preferAffineNodes([], owners, () => [], 'me').conflicts, [], 'nobody else announces it: no conflict')
})

t.test("the affine node's route keeps the learned route's metric (a BGPFilter priority)", async (t) => {
  const owners = new Map([['198.18.0.0/26', 'a']])
  const { routes } = preferAffineNodes([{ prefix: '198.18.0.0/26', nextHops: [B, A], metric: 1100 }], owners, () => [A, B], 'me')
  t.same(routes, [{ prefix: '198.18.0.0/26', nextHops: [A], metric: 1100 }])
})
