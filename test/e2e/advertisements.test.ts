// What a BIRD top-of-rack router gets from a 2-node cluster, and what the nodes take from it: the blocks
// with prefixAdvertisements' communities (named and literal, standard and large), the service CIDRs from
// every node, never a disableBGPExport pool's block (which the other node still routes to); the router's
// announcements of pool prefixes (the pool, a /24, a /32) are refused beside its ordinary route, counted
// in /v1/peers and /metrics, and installed once a BGPFilter of the peer accepts them.

import t from 'tap'
import { execa } from 'execa'
import { birdInstalled, type DemoNode } from '../../agent/demo/cluster.js'
import { apiGet, kernelRoutes } from '../../agent/demo/observe.js'
import { API_PORT } from '../../agent/demo/cluster.js'
import { TOR_PREFIX } from '../../agent/demo/tor.js'
import type { Resource } from '../../config/resources/index.js'
import { waitFor } from '../harness/wait.js'
import { makeCluster, ownBlocks } from './cluster.js'

const bird = await birdInstalled()
const V3 = 'projectcalico.org/v3' as const
const MAIN = '198.18.0.0/16'
const QUIET = '198.19.0.0/16'
const SERVICES = ['198.51.100.0/26', '198.51.100.64/26', '198.51.100.128/26']
const POOL_ROUTES = ['198.18.0.0/16', '198.18.200.0/24', '198.18.201.7/32']

interface PeerRow { name: string; address: string; refusedPoolPrefixes: number; refusedPoolPrefixesRecent: string[] }

t.test('advertisements to a BIRD top-of-rack, and pool prefixes from it', { skip: bird ? false : 'bird2 is not installed' }, async (t) => {
  const c = await makeCluster(t, { nodes: 2, tor: true, torPrefixes: [TOR_PREFIX, ...POOL_ROUTES] })
  const tor = c.tor!
  const resources: Resource[] = [
    { apiVersion: V3, kind: 'IPPool', metadata: { name: 'demo-ipv4-pool' }, spec: { cidr: MAIN, blockSize: 26, nodeSelector: 'all()' } },
    { apiVersion: V3, kind: 'IPPool', metadata: { name: 'quiet' }, spec: { cidr: QUIET, blockSize: 26, disableBGPExport: true, assignmentMode: 'Manual' } },
    {
      apiVersion: V3, kind: 'BGPConfiguration', metadata: { name: 'default' },
      spec: {
        asNumber: 64512,
        communities: [{ name: 'rack', value: '65010:100' }, { name: 'big', value: '65010:1:2' }],
        prefixAdvertisements: [
          { cidr: MAIN, communities: ['rack', '65010:7'] },
          { cidr: '198.18.0.0/15', communities: ['big', '4200000000:3:4'] },
        ],
        serviceClusterIPs: [{ cidr: SERVICES[0]! }],
        serviceExternalIPs: [{ cidr: SERVICES[1]! }],
        serviceLoadBalancerIPs: [{ cidr: SERVICES[2]! }],
      },
    },
  ]
  await c.writeResources(resources)
  const [n1, n2] = [c.node('node1'), c.node('node2')]
  const plain1 = await c.addPod(n1)
  const plain2 = await c.addPod(n2)
  t.match(plain1.address, /^198\.18\./, 'an ordinary pod never gets an address of the Manual pool')
  t.match(plain2.address, /^198\.18\./)
  const quietPod = await c.addPod(n1, { ipv4Pools: ['quiet'] })
  t.match(quietPod.address, /^198\.19\./, 'a pod whose CNI config names the Manual pool gets one of its addresses')

  // felix programs a newly claimed block's blackhole within about a second of the claim.
  const ownAll = async (): Promise<string[]> => (await Promise.all(c.nodes.map(ownBlocks))).flat().sort()
  const blocks = await waitFor(async () => {
    const b = await ownAll()
    return b.length >= 3 ? b : undefined
  }, { timeoutMs: 10_000, what: "every claimed block's blackhole in its node's kernel" }).catch(ownAll)
  const mainBlocks = blocks.filter((b) => b.startsWith('198.18.'))
  const quietBlock = blocks.find((b) => b.startsWith('198.19.'))
  t.equal(mainBlocks.length, 2, `one main block per node (all blocks: ${blocks.join(', ')})`)
  t.ok(quietBlock, 'node1 claimed a block of the quiet pool')
  const want = [...mainBlocks, ...SERVICES].sort()
  const learned = await waitFor(async () => {
    const l = (await tor.learned()).filter((p) => !POOL_ROUTES.includes(p))
    return JSON.stringify(l) === JSON.stringify(want) ? l : undefined
  }, { timeoutMs: 20_000, what: 'BIRD to learn the main blocks and the service CIDRs' }).catch(async () => tor.learned())
  t.same(learned, want, 'BIRD learned the main blocks and the three service CIDRs, not the disableBGPExport block')

  // Every node advertises the service ranges: BIRD holds one path per node for each.
  for (const s of SERVICES) {
    const out = await tor.birdc('show', 'route', 'all', 'for', s)
    t.equal([...out.matchAll(/BGP\.next_hop: (\S+)/g)].map((m) => m[1]).sort().join(' '), [n1.address, n2.address].sort().join(' '), `${s} from both nodes`)
  }
  for (const b of mainBlocks) {
    const out = await tor.birdc('show', 'route', 'all', b)
    const standard = [...(/BGP\.community: (.*)/.exec(out)?.[1] ?? '').matchAll(/\((\d+),\s*(\d+)\)/g)].map((m) => `${m[1]}:${m[2]}`).sort()
    const large = [...(/BGP\.large_community: (.*)/.exec(out)?.[1] ?? '').matchAll(/\((\d+),\s*(\d+),\s*(\d+)\)/g)].map((m) => `${m[1]}:${m[2]}:${m[3]}`).sort()
    t.same(standard, ['65010:100', '65010:7'], `${b}: the named and the literal standard community`)
    t.same(large, ['4200000000:3:4', '65010:1:2'], `${b}: the named and the literal large community`)
  }
  const services = await tor.birdc('show', 'route', 'all', 'for', SERVICES[0]!)
  t.notMatch(services, /BGP\.community/, 'a service range outside every advertisement carries no community')

  // The mesh still carries the quiet block: node2 routes to it (Calico's felix would from IPAM; pinto's from BGP).
  await waitFor(async () => (await kernelRoutes(n2.ns)).some((r) => r.prefix === quietBlock && r.type === 'unicast'), { timeoutMs: 15_000, what: `node2 to route ${quietBlock}` })
  t.pass(`node2 routes ${quietBlock} to node1`)

  const installed = async (n: DemoNode): Promise<string[]> => (await kernelRoutes(n.ns)).map((r) => r.prefix)
  for (const n of c.nodes) {
    await waitFor(async () => (await installed(n)).includes(TOR_PREFIX), { timeoutMs: 15_000, what: `${n.name} to install ${TOR_PREFIX}` })
    const have = await installed(n)
    t.same(POOL_ROUTES.filter((p) => have.includes(p)), [], `${n.name} installed none of the router's pool prefixes`)
    t.notOk(have.some((p) => SERVICES.includes(p)), `${n.name} programs no learned service range`)
    const peer = await waitFor(async () => {
      const body = (await apiGet(n, '/v1/peers')) as { peers?: PeerRow[] } | undefined
      const p = body?.peers?.find((x) => x.name.includes('tor') || x.address === '192.0.2.1')
      return p !== undefined && p.refusedPoolPrefixes >= 3 ? p : undefined
    }, { timeoutMs: 10_000, what: `${n.name}'s /v1/peers to count the refusals` })
    t.same([...peer.refusedPoolPrefixesRecent].sort(), [...POOL_ROUTES].sort(), `${n.name}: /v1/peers names the refused prefixes`)
    const metrics = String((await execa('ip', ['netns', 'exec', n.ns, 'curl', '-sf', '--max-time', '3', `http://127.0.0.1:${API_PORT}/metrics`])).stdout)
    t.match(metrics, new RegExp(`pinto_bgp_refused_pool_prefixes_total\\{peer="${peer.name}"\\} [3-9]`), `${n.name}: /metrics counts them`)
  }

  await c.writeResources([
    { apiVersion: V3, kind: 'BGPFilter', metadata: { name: 'tor-in' }, spec: { importV4: [
      { action: 'Accept', cidr: '198.18.200.0/24', matchOperator: 'In' },
      { action: 'Accept', cidr: MAIN, matchOperator: 'Equal' },
    ] } },
    { apiVersion: V3, kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: '192.0.2.1', asNumber: 65000, filters: ['tor-in'] } },
  ])
  for (const n of c.nodes) {
    const have = await waitFor(async () => {
      const h = await installed(n)
      return h.includes('198.18.200.0/24') && h.includes(MAIN) ? h : undefined
    }, { timeoutMs: 15_000, what: `${n.name} to install the pool prefixes the BGPFilter accepts` })
    t.notOk(have.includes('198.18.201.7/32'), `${n.name}: the /32 no rule accepts stays refused`)
    t.ok(have.includes(TOR_PREFIX), `${n.name} keeps the ordinary route`)
  }
})
