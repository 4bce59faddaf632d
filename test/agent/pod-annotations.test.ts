// Calico's CNI annotations as pinto reads them: precedence of the pod over its namespace per annotation, fixed
// addresses from the pod only, the pools checked (exists, enabled, family), and every refusal naming the annotation,
// the object it is on and the value. With no Kubernetes credentials, the pod features say so once and change nothing.
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { POD_ANNOTATIONS as A, checkFixedAddresses, familyPools, namespaceMatters, readPodIpamAsk, resolveAnnotatedPools } from '../../agent/pod-annotations.js'
import { KubePods, NO_CREDENTIALS_PODS } from '../../agent/kube-pods.js'
import { openEmbeddedDatastore } from '../../config/datastore-embedded.js'
import type { PoolSpec } from '../../ipam/index.js'

const POOLS: PoolSpec[] = [
  { name: 'default-v4', cidr: '198.18.0.0/24', blockSize: 26 },
  { name: 'gold', cidr: '198.18.1.0/24', blockSize: 26 },
  { name: 'off', cidr: '198.18.3.0/24', blockSize: 26, disabled: true },
  { name: 'v6', cidr: '2001:db8:18::/48', blockSize: 122 },
]
const pod = (annotations: Record<string, string>): { on: string; annotations: Record<string, string> } => ({ on: 'pod team/web-0', annotations })
const ns = (annotations: Record<string, string>): { on: string; annotations: Record<string, string> } => ({ on: 'namespace team (of pod team/web-0)', annotations })

t.test('precedence: each pool annotation from the pod, else from its namespace', async (t) => {
  const ask = readPodIpamAsk(pod({ [A.ipv4Pools]: '["gold"]' }), ns({ [A.ipv4Pools]: '["default-v4"]', [A.ipv6Pools]: '["v6"]' }))
  t.same(ask.pools[4]?.entries, ['gold'])
  t.equal(ask.pools[4]?.found.on, 'pod team/web-0')
  t.same(ask.pools[6]?.entries, ['v6'], 'ipv6pools from the namespace, the pod having none')
  t.equal(ask.pools[6]?.found.on, 'namespace team (of pod team/web-0)')
  t.same(readPodIpamAsk(pod({ [A.ipv4Pools]: '' }), ns({ [A.ipv4Pools]: '["gold"]' })).pools[4]?.entries, ['gold'], 'an empty value on the pod counts as unset')
  t.same(readPodIpamAsk(pod({}), undefined), { pools: {} }, 'nothing asked')
  t.notOk(namespaceMatters({ [A.ipAddrs]: '["198.18.0.9"]' }), 'fixed addresses: the namespace cannot matter')
  t.notOk(namespaceMatters({ [A.ipv4Pools]: '[]', [A.ipv6Pools]: '[]', [A.ipFamilies]: '["IPv4"]' }))
  t.ok(namespaceMatters({ [A.ipv4Pools]: '["gold"]' }))
})

t.test('ipAddrs: from the pod only, one address per family, the pools then unused', async (t) => {
  const ask = readPodIpamAsk(pod({ [A.ipAddrs]: '["198.18.0.77", "2001:db8:18::77"]', [A.ipv4Pools]: '["gold"]' }), undefined)
  t.same(ask.fixed?.addresses, [{ address: '198.18.0.77', family: 4 }, { address: '2001:db8:18::77', family: 6 }])
  t.equal(readPodIpamAsk(pod({}), ns({ [A.ipAddrs]: '["198.18.0.77"]' })).fixed, undefined, 'not from the namespace')
  t.doesNotThrow(() => checkFixedAddresses(ask.fixed!, POOLS))
})

t.test('refusals name the annotation, the object and the value', async (t) => {
  const refused = (fn: () => unknown, re: RegExp, what: string): void => {
    t.throws(fn, { code: 'invalid', message: re }, what)
  }
  refused(() => readPodIpamAsk(pod({ [A.ipv4Pools]: 'gold' }), undefined), /^annotation cni\.projectcalico\.org\/ipv4pools=gold on pod team\/web-0: not JSON/, 'not JSON')
  refused(() => readPodIpamAsk(pod({}), ns({ [A.ipv6Pools]: '{"a":1}' })), /ipv6pools=\{"a":1\} on namespace team \(of pod team\/web-0\): expected a JSON list of IP pool names or CIDRs/, 'not a list, on the namespace')
  refused(() => readPodIpamAsk(pod({ [A.ipFamilies]: '["IPv5"]' }), undefined), /ipFamilies=\["IPv5"\] on pod team\/web-0: "IPv5" is not an IP family/, 'a family')
  refused(() => readPodIpamAsk(pod({ [A.ipAddrs]: '[]' }), undefined), /ipAddrs=\[\] on pod team\/web-0: is empty/, 'empty ipAddrs')
  refused(() => readPodIpamAsk(pod({ [A.ipAddrs]: '["198.18.0.300"]' }), undefined), /ipAddrs=\["198\.18\.0\.300"\] on pod team\/web-0: "198\.18\.0\.300" is not an IP address/, 'a bad address')
  refused(() => readPodIpamAsk(pod({ [A.ipAddrs]: '["198.18.0.7","198.18.0.8"]' }), undefined), /more than one IPv4 address/, 'two of a family')
  refused(() => readPodIpamAsk(pod({ [A.ipAddrsNoIpam]: '["198.18.0.7"]' }), undefined), /ipAddrsNoIpam=\["198\.18\.0\.7"\] on pod team\/web-0: not supported/, 'no-IPAM addresses')
  refused(() => readPodIpamAsk(pod({ [A.ipAddrsNoIpam]: '["198.18.0.7"]', [A.ipAddrs]: '["198.18.0.7"]' }), undefined), /cannot be used together with cni\.projectcalico\.org\/ipAddrs/, 'both')
  const ask = (v: string): Parameters<typeof resolveAnnotatedPools>[0] => readPodIpamAsk(pod({ [A.ipv4Pools]: v }), undefined).pools[4]!
  refused(() => resolveAnnotatedPools(ask('["nope"]'), 4, POOLS), /ipv4pools=\["nope"\] on pod team\/web-0: IP pool "nope" does not exist/, 'a missing pool')
  refused(() => resolveAnnotatedPools(ask('["off"]'), 4, POOLS), /IP pool off \(198\.18\.3\.0\/24\) is disabled/, 'a disabled pool')
  refused(() => resolveAnnotatedPools(ask('["198.51.100.0/24"]'), 4, POOLS), /no IP pool has CIDR 198\.51\.100\.0\/24/, 'a CIDR of no pool')
  refused(() => resolveAnnotatedPools(ask('["v6"]'), 4, POOLS), /IP pool v6 \(2001:db8:18::\/48\) is an IPv6 pool, not IPv4/, 'the wrong family')
  t.same(resolveAnnotatedPools(ask('["gold", "198.18.0.0/24"]'), 4, POOLS), ['gold', 'default-v4'], 'by name and by CIDR')
  const fixed = (v: string): NonNullable<ReturnType<typeof readPodIpamAsk>['fixed']> => readPodIpamAsk(pod({ [A.ipAddrs]: v }), undefined).fixed!
  refused(() => checkFixedAddresses(fixed('["198.51.100.9"]'), POOLS), /ipAddrs=\["198\.51\.100\.9"\] on pod team\/web-0: 198\.51\.100\.9 is outside every IP pool/, 'outside the pools')
  refused(() => checkFixedAddresses(fixed('["198.18.3.9"]'), POOLS), /198\.18\.3\.9 is in IP pool off, which is disabled/, 'in a disabled pool')
})

t.test('per-family pools: the annotation for its family, the network config for the other', async (t) => {
  t.same(familyPools(['default-v4', 'v6'], { 4: ['gold'] }, POOLS), { 4: ['gold'], 6: ['v6'] })
  t.same(familyPools(undefined, { 6: ['v6'] }, POOLS), { 6: ['v6'] }, 'IPv4 unrestricted')
  t.same(familyPools(['unknown'], { 6: ['v6'] }, POOLS), { 4: ['unknown'], 6: ['v6'] }, 'an entry of no known family stays, where the allocator refuses it')
  t.same(familyPools(['gold'], { 4: [] }, POOLS), {}, 'an empty list: any pool, as Calico takes it')
})

t.test('without Kubernetes credentials: the pods part is silent (the agent says it once) and the ADDs are ordinary', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-pods-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const store = await openEmbeddedDatastore(dir)
  t.teardown(() => store.close())
  const lines: string[] = []
  const pods = new KubePods({ node: 'n1', store, source: undefined, gcGraceSeconds: 900, log: (_l, msg) => lines.push(msg) })
  await pods.start()
  pods.attachIpam({ release: async () => undefined, busy: () => false, releasing: () => false }, async () => [])
  t.same(lines, [], 'no line of its own')
  t.match(NO_CREDENTIALS_PODS, /annotations are not read.*keep their addresses/, 'what the agent says is off')
  t.equal(await pods.ipamHooks.plan({ handle: 'net.c1', node: 'n1', num4: 1, attrs: { namespace: 'team', pod: 'web-0' } }), undefined)
  t.equal(pods.gc, undefined, 'no pod GC')
  await pods.stop()
})
