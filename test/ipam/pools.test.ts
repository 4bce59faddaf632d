// Pool views: validation of block sizes, eligibility (disabled, selectors, uses, narrowing) and block walking.
import t from 'tap'
import { formatCidr, parseAddr } from '../../net/index.js'
import { blockCandidates, eligiblePools, poolBlockCount, poolBlockOf, toPool } from '../../ipam/pools.js'

t.test('block sizes are bounded per family and must fit the pool', async (t) => {
  const cases: [string, number, RegExp | null][] = [
    ['198.18.0.0/16', 26, null],
    ['198.18.0.0/16', 19, /19 is outside 20\.\.32/],
    ['198.18.0.0/16', 33, /outside 20\.\.32/],
    ['198.18.0.0/28', 26, /a \/26 block does not fit/],
    ['2001:db8::/64', 122, null],
    ['2001:db8::/64', 112, /outside 116\.\.128/],
  ]
  for (const [cidr, blockSize, err] of cases) {
    if (err === null) t.doesNotThrow(() => toPool({ name: 'p', cidr, blockSize }, 'pools[0]'))
    else t.throws(() => toPool({ name: 'p', cidr, blockSize }, 'pools[0]'), { message: err, field: 'pools[0].blockSize' })
  }
})

t.test('eligibility honours disabled, selectors, uses and the requested pools', async (t) => {
  const pools = [
    toPool({ name: 'a', cidr: '198.18.0.0/24', blockSize: 26 }),
    toPool({ name: 'off', cidr: '198.18.1.0/24', blockSize: 26, disabled: true }),
    toPool({ name: 'n1', cidr: '198.18.2.0/24', blockSize: 26, nodeSelector: (n) => n === 'n1' }),
    toPool({ name: 'lb', cidr: '198.18.3.0/24', blockSize: 26, allowedUses: ['LoadBalancer'] }),
    toPool({ name: 'sel', cidr: '198.18.4.0/24', blockSize: 26, nodeSelector: "zone == 'a'" }),
    toPool({ name: 'v6', cidr: '2001:db8::/120', blockSize: 122 }),
  ]
  const matcher = (p: { nodeSelector?: unknown }, n: string): boolean => p.nodeSelector === "zone == 'a'" && n === 'n1'
  const names = (node: string, requested?: string[]): string[] => eligiblePools(pools, 4, node, 'Workload', requested, matcher).map((p) => p.spec.name)
  t.same(names('n1'), ['a', 'n1', 'sel'])
  t.same(names('n2'), ['a'])
  t.same(names('n1', ['198.18.2.0/24', 'off']), ['n1'])
  t.same(eligiblePools(pools, 6, 'n2', 'Workload', undefined, matcher).map((p) => p.spec.name), ['v6'])
  t.same(eligiblePools(pools, 4, 'n2', 'LoadBalancer', undefined, matcher).map((p) => p.spec.name), ['lb'])
  t.throws(() => eligiblePools(pools, 4, 'n1', 'Workload', undefined), /pool sel\.nodeSelector: .* needs a node matcher/)
})

t.test('each node walks every block once, from its own starting point', async (t) => {
  const pool = toPool({ name: 'a', cidr: '198.18.0.0/24', blockSize: 28 })
  t.equal(poolBlockCount(pool), 16n)
  const walk = (node: string): string[] => [...blockCandidates(pool, node)].map(formatCidr)
  const w1 = walk('node-1')
  t.equal(new Set(w1).size, 16)
  t.same(walk('node-1'), w1, 'stable per node')
  t.not(walk('node-2')[0], w1[0], 'nodes start apart')
  const big = toPool({ name: 'v6', cidr: '2001:db8::/64', blockSize: 122 })
  t.equal(poolBlockCount(big), 1n << 58n)
  const first = blockCandidates(big, 'n').next()
  t.ok(first.done === false && first.value.prefix === 122, 'a huge pool is walked lazily')
  const a = parseAddr('198.18.0.77')
  t.equal(formatCidr(poolBlockOf(pool, a.family, a.value)!), '198.18.0.64/28')
  t.equal(poolBlockOf(pool, 4, parseAddr('198.18.1.1').value), undefined)
})
