// Which Service addresses a node advertises, as tables: Services, EndpointSlices, the default BGPConfiguration and the
// node in, prefixes (each with the Services it is for) out; Calico's rules for externalTrafficPolicy Local and Cluster,
// aggregation, single-address ranges, ready endpoints, address families and the exclusion label. Then which service
// ranges every node originates whole, and the problems a bad value is reported as.
import t from 'tap'
import type { BGPConfigurationSpec, KubeObject } from '../../config/index.js'
import { compileServiceRanges, hasServiceRanges, originatedServiceRanges, serviceNode, serviceRoutes, EXCLUDE_LABEL } from '../../agent/service-routes.js'

const CONFIG: BGPConfigurationSpec = {
  serviceClusterIPs: [{ cidr: '198.51.100.0/24' }, { cidr: '2001:db8:c::/112' }],
  serviceExternalIPs: [{ cidr: '203.0.113.0/25' }, { cidr: '203.0.113.200/32' }],
  serviceLoadBalancerIPs: [{ cidr: '203.0.113.128/26' }, { cidr: '203.0.113.250/32' }, { cidr: '2001:db8:5::/112' }],
}

interface Svc {
  ns?: string
  type?: string
  policy?: 'Local' | 'Cluster'
  clusterIP?: string
  clusterIPs?: unknown
  families?: string[]
  externalIPs?: unknown
  ingress?: string[]
  loadBalancerIP?: string
}

function svc(name: string, s: Svc = {}): KubeObject {
  const type = s.type ?? 'LoadBalancer'
  const clusterIP = s.clusterIP ?? '198.51.100.10'
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: s.ns ?? 'web' },
    spec: {
      type,
      clusterIP,
      ...(s.clusterIPs !== undefined ? { clusterIPs: s.clusterIPs } : clusterIP !== 'None' ? { clusterIPs: [clusterIP] } : {}),
      ipFamilies: s.families ?? ['IPv4'],
      ...(type === 'LoadBalancer' || type === 'NodePort' ? { externalTrafficPolicy: s.policy ?? 'Cluster' } : s.policy !== undefined ? { externalTrafficPolicy: s.policy } : {}),
      ...(s.externalIPs !== undefined ? { externalIPs: s.externalIPs } : {}),
      ...(s.loadBalancerIP !== undefined ? { loadBalancerIP: s.loadBalancerIP } : {}),
    },
    status: { loadBalancer: s.ingress === undefined ? {} : { ingress: s.ingress.map((ip) => ({ ip })) } },
  }
}

/** An EndpointSlice of a Service: endpoints as [node, ready] (ready undefined: no conditions at all). */
function slice(service: string, endpoints: [string, boolean | undefined][], opts: { ns?: string; addressType?: string; name?: string } = {}): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: opts.name ?? `${service}-abcde`, namespace: opts.ns ?? 'web', labels: { 'kubernetes.io/service-name': service } },
    addressType: opts.addressType ?? 'IPv4',
    endpoints: endpoints.map(([nodeName, ready], i) => ({ addresses: [`198.18.0.${i + 1}`], nodeName, ...(ready === undefined ? {} : { conditions: { ready } }) })),
  }
}

const ME = serviceNode('node1', {})

type Row = [what: string, services: KubeObject[], slices: KubeObject[], want: Record<string, string[]>, config?: BGPConfigurationSpec]

const rows: Row[] = [
  ['Local, a ready endpoint here: its cluster IP and ingress IP', [svc('a', { policy: 'Local', ingress: ['203.0.113.130'] })], [slice('a', [['node1', true]])],
    { '198.51.100.10/32': ['web/a'], '203.0.113.130/32': ['web/a'] }],
  ['Local, its only endpoint on another node: nothing', [svc('a', { policy: 'Local', ingress: ['203.0.113.130'] })], [slice('a', [['node2', true]])], {}],
  ['Local, the endpoint here not ready: nothing', [svc('a', { policy: 'Local', ingress: ['203.0.113.130'] })], [slice('a', [['node1', false], ['node2', true]])], {}],
  ['Local, the endpoint here with no conditions counts as ready', [svc('a', { policy: 'Local', ingress: ['203.0.113.130'] })], [slice('a', [['node1', undefined]])],
    { '198.51.100.10/32': ['web/a'], '203.0.113.130/32': ['web/a'] }],
  ['Local, the endpoint in a second slice of the Service', [svc('a', { policy: 'Local', ingress: ['203.0.113.130'] })],
    [slice('a', [['node2', true]]), slice('a', [['node1', true]], { name: 'a-fghij' })], { '198.51.100.10/32': ['web/a'], '203.0.113.130/32': ['web/a'] }],
  ['Local, slices of a Service of the same name elsewhere, or of another Service: nothing', [svc('a', { policy: 'Local', ingress: ['203.0.113.130'] })],
    [slice('a', [['node1', true]], { ns: 'other' }), slice('b', [['node1', true]])], {}],
  ['Local, an ingress IP outside serviceLoadBalancerIPs: only the cluster IP', [svc('a', { policy: 'Local', ingress: ['192.0.2.7'] })], [slice('a', [['node1', true]])],
    { '198.51.100.10/32': ['web/a'] }],
  ['Local, without serviceClusterIPs: the ingress IP only', [svc('a', { policy: 'Local', ingress: ['203.0.113.130'] })], [slice('a', [['node1', true]])],
    { '203.0.113.130/32': ['web/a'] }, { ...CONFIG, serviceClusterIPs: [] }],
  ['Local, external IPs: those inside serviceExternalIPs', [svc('a', { type: 'ClusterIP', policy: 'Local', externalIPs: ['203.0.113.5', '192.0.2.9', '203.0.113.200'] })],
    [slice('a', [['node1', true]])], { '198.51.100.10/32': ['web/a'], '203.0.113.200/32': ['web/a'], '203.0.113.5/32': ['web/a'] }],
  ['Cluster, aggregation on (default): covered by the ranges, no /32', [svc('a', { ingress: ['203.0.113.130'] })], [slice('a', [['node1', true]])], {}],
  ['Cluster, its ingress IP a single-address range: from every node, endpoints or not', [svc('a', { ingress: ['203.0.113.250'] })], [],
    { '198.51.100.10/32': ['web/a'], '203.0.113.250/32': ['web/a'] }],
  ['Cluster, spec.loadBalancerIP a single-address range: the ingress IPs', [svc('a', { loadBalancerIP: '203.0.113.250', ingress: ['203.0.113.131'] })], [],
    { '198.51.100.10/32': ['web/a'], '203.0.113.131/32': ['web/a'] }],
  ['Cluster, an external IP a single-address range: from every node', [svc('a', { type: 'NodePort', externalIPs: ['203.0.113.200'] })], [],
    { '198.51.100.10/32': ['web/a'], '203.0.113.200/32': ['web/a'] }],
  ['Cluster, aggregation Disabled, a ready endpoint elsewhere: from every node', [svc('a', { ingress: ['203.0.113.130'] })], [slice('a', [['node2', true]])],
    { '198.51.100.10/32': ['web/a'], '203.0.113.130/32': ['web/a'] }, { ...CONFIG, serviceLoadBalancerAggregation: 'Disabled' }],
  ['Cluster, aggregation Disabled, no ready endpoint: nothing', [svc('a', { ingress: ['203.0.113.130'] })], [slice('a', [['node2', false]])],
    {}, { ...CONFIG, serviceLoadBalancerAggregation: 'Disabled' }],
  ['Headless: nothing', [svc('a', { type: 'ClusterIP', clusterIP: 'None', policy: 'Local', externalIPs: ['203.0.113.5'] })], [slice('a', [['node1', true]])], {}],
  ['ExternalName: nothing', [svc('a', { type: 'ExternalName', policy: 'Local', externalIPs: ['203.0.113.5'] })], [slice('a', [['node1', true]])], {}],
  ['IPv6: a /128 in canonical form, from an IPv6 slice only', [svc('a', { policy: 'Local', clusterIP: '2001:DB8:C::0:a', families: ['IPv6'], ingress: ['2001:db8:5:0::7'] })],
    [slice('a', [['node1', true]], { addressType: 'IPv4' }), slice('a', [['node1', true]], { addressType: 'IPv6', name: 'a-v6' })],
    { '2001:db8:5::7/128': ['web/a'], '2001:db8:c::a/128': ['web/a'] }],
  ['IPv6 Service, IPv4 slices only: nothing', [svc('a', { policy: 'Local', clusterIP: '2001:db8:c::a', families: ['IPv6'], ingress: ['2001:db8:5::7'] })],
    [slice('a', [['node1', true]])], {}],
  ['Dual stack: both cluster IPs, both ingress IPs', [svc('a', { policy: 'Local', clusterIPs: ['198.51.100.10', '2001:db8:c::a'], families: ['IPv4', 'IPv6'], ingress: ['203.0.113.130', '2001:db8:5::7'] })],
    [slice('a', [['node1', true]])], { '198.51.100.10/32': ['web/a'], '2001:db8:5::7/128': ['web/a'], '2001:db8:c::a/128': ['web/a'], '203.0.113.130/32': ['web/a'] }],
  ['Two Services sharing an external IP: one prefix for both', [
    svc('a', { type: 'ClusterIP', policy: 'Local', clusterIP: '198.51.100.10', externalIPs: ['203.0.113.5'] }),
    svc('b', { type: 'ClusterIP', policy: 'Local', clusterIP: '198.51.100.11', externalIPs: ['203.0.113.5'] }),
  ], [slice('a', [['node1', true]]), slice('b', [['node1', true]])], { '198.51.100.10/32': ['web/a'], '198.51.100.11/32': ['web/b'], '203.0.113.5/32': ['web/a', 'web/b'] }],
  ['No service range configured: nothing', [svc('a', { policy: 'Local', ingress: ['203.0.113.130'] })], [slice('a', [['node1', true]])], {}, {}],
]

t.test('the Service addresses a node advertises', async (t) => {
  for (const [what, services, slices, want, config] of rows) {
    const got = serviceRoutes({ services, slices, config: config ?? CONFIG, node: ME })
    t.same(Object.fromEntries(got.routes), want, what)
    t.same(got.problems, [], `${what}: no problem`)
  }
})

t.test('a node labelled exclude-from-external-load-balancers advertises none', async (t) => {
  const services = [svc('a', { policy: 'Local', ingress: ['203.0.113.130'] }), svc('b', { ingress: ['203.0.113.250'] })]
  const slices = [slice('a', [['node1', true]])]
  t.same(Object.keys(Object.fromEntries(serviceRoutes({ services, slices, config: CONFIG, node: ME }).routes)).length, 3, 'advertised without the label')
  for (const value of ['true']) {
    const node = serviceNode('node1', { [EXCLUDE_LABEL]: value })
    t.same([...serviceRoutes({ services, slices, config: CONFIG, node }).routes.keys()], [], `${EXCLUDE_LABEL}=${value}`)
  }
  t.same(serviceRoutes({ services, slices, config: CONFIG, node: serviceNode('node1', { [EXCLUDE_LABEL]: 'false' }) }).routes.size, 3, 'the label false excludes nothing')
})

t.test('a value that cannot be read is named, and the rest of the Service still counts', async (t) => {
  const services = [
    svc('a', { type: 'ClusterIP', policy: 'Local', externalIPs: ['203.0.113.5', 'not-an-ip', '203.0.113.6/32', 7] }),
    svc('b', { policy: 'Local', externalIPs: 'not a list', ingress: ['203.0.113.140'] }),
  ]
  const badSlice = { ...slice('b', []), metadata: { name: 'b-bad', namespace: 'web', labels: { 'kubernetes.io/service-name': 'b' } }, endpoints: {} }
  const slices = [slice('a', [['node1', true]]), badSlice, slice('b', [['node1', true]])]
  const got = serviceRoutes({ services, slices, config: CONFIG, node: ME })
  t.same(Object.fromEntries(got.routes), { '198.51.100.10/32': ['web/a', 'web/b'], '203.0.113.5/32': ['web/a'], '203.0.113.140/32': ['web/b'] })
  t.same(got.problems, [
    'Service web/a: spec.externalIPs[3]: not a string',
    'Service web/a: spec.externalIPs[1]: "not-an-ip" is not an IP address',
    'Service web/a: spec.externalIPs[2]: "203.0.113.6/32" is not an IP address',
    'Service web/b: spec.externalIPs: not a list',
    'Service web/b: EndpointSlice web/b-bad: endpoints: not a list',
  ])
  t.throws(() => compileServiceRanges({ serviceLoadBalancerIPs: [{ cidr: '203.0.113.0/24' }, { cidr: 'nonsense' }] }), /spec\.serviceLoadBalancerIPs\[1\]\.cidr: /)
})

t.test('the service ranges every node originates whole', async (t) => {
  const table: [string, BGPConfigurationSpec, boolean, boolean, string[]][] = [
    // what, config, Services read, excluded, originated
    ['Services read: single addresses go per Service', CONFIG, true, false, ['198.51.100.0/24', '2001:db8:c::/112', '203.0.113.0/25', '203.0.113.128/26', '2001:db8:5::/112']],
    ['no Kubernetes API: every range whole, single addresses too', CONFIG, false, false,
      ['198.51.100.0/24', '2001:db8:c::/112', '203.0.113.0/25', '203.0.113.200/32', '203.0.113.128/26', '203.0.113.250/32', '2001:db8:5::/112']],
    ['aggregation Disabled: no LoadBalancer range', { ...CONFIG, serviceLoadBalancerAggregation: 'Disabled' }, true, false, ['198.51.100.0/24', '2001:db8:c::/112', '203.0.113.0/25']],
    ['a single-address cluster IP range stays whole', { serviceClusterIPs: [{ cidr: '198.51.100.10/32' }] }, true, false, ['198.51.100.10/32']],
    ['the same range in two lists, once', { serviceExternalIPs: [{ cidr: '203.0.113.0/24' }], serviceLoadBalancerIPs: [{ cidr: '203.0.113.0/24' }] }, true, false, ['203.0.113.0/24']],
    ['an excluded node: none', CONFIG, true, true, []],
    ['no ranges', {}, true, false, []],
  ]
  for (const [what, config, perService, excluded, want] of table) t.same(originatedServiceRanges(config, { excluded }, perService), want, what)
  t.notOk(hasServiceRanges(compileServiceRanges({})), 'no range: nothing to watch')
  t.ok(hasServiceRanges(compileServiceRanges({ serviceExternalIPs: [{ cidr: '203.0.113.200/32' }] })), 'one single address: watch')
})
