// pinto-node's environment: defaults, every method of finding the node address, and one-line
// errors that name the variable.
import t from 'tap'
import { settingsFromEnv, SettingsError } from '../../agent/settings.js'
import { originationFor } from '../../agent/origination.js'
import { vtepMac } from '../../agent/controllers/registration.js'
import type { AllocationBlock } from '../../ipam/block.js'

t.test('defaults as DESIGN.md lists them', async (t) => {
  const s = settingsFromEnv({ PINTO_NODENAME: 'n1' })
  t.match(s, {
    nodeName: 'n1',
    ip: { kind: 'first-found' },
    ip6: { kind: 'none' },
    datastore: '/var/lib/pinto/store',
    apiListen: { host: '127.0.0.1', port: 9099 },
    socket: '/var/run/pinto/pinto.sock',
    dataplane: 'kernel',
    routeWriter: 'netlink',
    logLevel: 'info',
    bgpPort: 179,
  })
  t.equal(s.asNumber, undefined)
  t.equal(s.ipamClaimAhead, undefined, 'a quarter of a block, worked out per block')
  t.equal(settingsFromEnv({ PINTO_NODENAME: 'n1', PINTO_IPAM_CLAIM_AHEAD: '0' }).ipamClaimAhead, 0)
  t.equal(settingsFromEnv({ PINTO_NODENAME: 'n1', PINTO_IPAM_CLAIM_AHEAD: '12' }).ipamClaimAhead, 12)
  t.equal(s.nodeGcGraceSeconds, 300, 'a deleted Node keeps its records 300 s')
  t.equal(settingsFromEnv({ PINTO_NODE_GC_GRACE_SECONDS: '0' }).nodeGcGraceSeconds, 0)
})

t.test('etcd TLS files are named, not read, by the settings', async (t) => {
  const env = { PINTO_DATASTORE: 'https://127.0.0.1:2379', PINTO_ETCD_CA_CERT_FILE: '/absent/ca.crt', PINTO_ETCD_CERT_FILE: '/absent/c.crt', PINTO_ETCD_KEY_FILE: '/absent/c.key' }
  t.same(settingsFromEnv(env).etcdTls, { ca: '/absent/ca.crt', cert: '/absent/c.crt', key: '/absent/c.key' })
  t.same(settingsFromEnv({ PINTO_DATASTORE: 'https://127.0.0.1:2379' }).etcdTls, {})
})

t.test('address methods', async (t) => {
  t.match(settingsFromEnv({ PINTO_IP: '192.0.2.5/24' }).ip, { kind: 'explicit', address: '192.0.2.5', prefixLength: 24 })
  t.match(settingsFromEnv({ PINTO_IP: 'autodetect' }).ip, { kind: 'first-found' })
  t.ok((settingsFromEnv({ PINTO_IP: 'interface=eth.*' }).ip as { pattern: RegExp }).pattern.test('eth0'))
  t.match(settingsFromEnv({ PINTO_IP: 'can-reach=192.0.2.1' }).ip, { kind: 'can-reach', destination: '192.0.2.1' })
  t.match(settingsFromEnv({ PINTO_IP6: '2001:db8::5/64' }).ip6, { kind: 'explicit', address: '2001:db8::5' })
  t.equal(settingsFromEnv({ PINTO_AS: '1.10' }).asNumber, 65546)
})

const bad: [Record<string, string>, string, RegExp][] = [
  [{ PINTO_IP: '192.0.2.500/24' }, 'PINTO_IP', /not an IPv4 address/],
  [{ PINTO_IP: 'interface=(' }, 'PINTO_IP', /not a regular expression/],
  [{ PINTO_IP: 'can-reach=nowhere' }, 'PINTO_IP', /not an IPv4 address/],
  [{ PINTO_IP: '192.0.02.5/24' }, 'PINTO_IP', /leading zero \(02\)/],
  [{ PINTO_IP6: 'fe80::5%eth0/64' }, 'PINTO_IP6', /zone index/],
  [{ PINTO_IPV4POOL_CIDR: '198.18.0.1/16' }, 'PINTO_IPV4POOL_CIDR', /host bits set \(the network is 198\.18\.0\.0\/16\)/],
  [{ PINTO_AS: '0' }, 'PINTO_AS', /out of range/],
  [{ PINTO_DATASTORE: 'etcd://' }, 'PINTO_DATASTORE', /./],
  [{ PINTO_API_LISTEN: 'localhost' }, 'PINTO_API_LISTEN', /host:port/],
  [{ PINTO_ROUTE_WRITER: 'ioctl' }, 'PINTO_ROUTE_WRITER', /netlink|ip/],
  [{ PINTO_DATAPLANE: 'ebpf' }, 'PINTO_DATAPLANE', /kernel, none/],
  [{ PINTO_LOG_LEVEL: 'loud' }, 'PINTO_LOG_LEVEL', /info/],
  [{ PINTO_BGP_PORT: '70000' }, 'PINTO_BGP_PORT', /1 to 65535/],
  [{ PINTO_IPV4POOL_CIDR: '198.18.0.0' }, 'PINTO_IPV4POOL_CIDR', /CIDR/],
  [{ PINTO_IPV4POOL_IPIP: 'Always', PINTO_IPV4POOL_VXLAN: 'Always' }, 'PINTO_IPV4POOL_VXLAN', /both/],
  [{ PINTO_NODENAME: 'a/b' }, 'PINTO_NODENAME', /no '\/'/],
  [{ PINTO_DATASTORE: 'https://e:2379', PINTO_ETCD_CERT_FILE: '/c.crt' }, 'PINTO_ETCD_KEY_FILE', /not set but PINTO_ETCD_CERT_FILE is/],
  [{ PINTO_DATASTORE: 'https://e:2379', PINTO_ETCD_KEY_FILE: '/c.key' }, 'PINTO_ETCD_CERT_FILE', /not set but PINTO_ETCD_KEY_FILE is/],
  [{ PINTO_DATASTORE: 'etcd://e:2379', PINTO_ETCD_CA_CERT_FILE: '/ca.crt' }, 'PINTO_ETCD_CA_CERT_FILE', /needs https:\/\//],
  [{ PINTO_ETCD_KEY_FILE: '/c.key', PINTO_ETCD_CERT_FILE: '/c.crt' }, 'PINTO_ETCD_CERT_FILE', /embedded datastore/],
  [{ PINTO_DATASTORE: 'https://e:2379', PINTO_ETCD_CA_CERT_FILE: ' /ca.crt' }, 'PINTO_ETCD_CA_CERT_FILE', /spaces/],
  [{ PINTO_IPAM_CLAIM_AHEAD: '-1' }, 'PINTO_IPAM_CLAIM_AHEAD', /whole number from 0 to 65536/],
  [{ PINTO_IPAM_CLAIM_AHEAD: 'quarter' }, 'PINTO_IPAM_CLAIM_AHEAD', /whole number from 0 to 65536/],
  [{ PINTO_NODE_GC_GRACE_SECONDS: '5m' }, 'PINTO_NODE_GC_GRACE_SECONDS', /whole number from 0 to 604800/],
]
for (const [env, variable, message] of bad) {
  t.test(`${JSON.stringify(env)} names ${variable}`, async (t) => {
    let caught: unknown
    try {
      settingsFromEnv(env)
    } catch (e) {
      caught = e
    }
    t.ok(caught instanceof SettingsError, 'a SettingsError')
    const e = caught as SettingsError
    t.equal(e.variable, variable)
    t.match(e.message, message)
    t.notOk(e.message.includes('\n'), 'one line')
  })
}

t.test('origination: own blocks as prefixes, borrowed addresses as /32s, own pods never', async (t) => {
  const block = (cidr: string, affinity: string | null, allocs: (string | null)[]): AllocationBlock => ({
    cidr,
    affinity,
    affinityClaimTime: null,
    allocations: allocs.map((n, i) => (n === null ? null : i)),
    unallocated: [],
    attributes: allocs.map((n): AllocationBlock['attributes'][number] => ({ handleId: n ? `h-${n}` : null, secondary: n ? { node: n } : {} })),
    sequenceNumber: 1,
    sequenceNumberForAllocation: {},
  })
  const o = originationFor('a', [block('198.18.0.0/26', 'host:a', ['a', 'a', null]), block('198.18.0.64/26', 'host:b', ['b', 'a', null, 'a'])])
  t.same(o, { blocks: ['198.18.0.0/26'], borrowed: ['198.18.0.65/32', '198.18.0.67/32'] })
})

t.test('the VTEP MAC is stable, unicast and locally administered', async (t) => {
  const mac = vtepMac('node-1')
  t.equal(mac, vtepMac('node-1'))
  t.not(mac, vtepMac('node-2'))
  const first = parseInt(mac.slice(0, 2), 16)
  t.equal(first & 1, 0)
  t.equal(first & 2, 2)
})

t.test('pods: PINTO_POD_GC_GRACE_SECONDS, and Kubernetes credentials in any datastore mode', async (t) => {
  const s = settingsFromEnv({ PINTO_NODENAME: 'n1' })
  t.equal(s.podGcGraceSeconds, 900, "Calico's leakGracePeriod")
  t.equal(s.kube, undefined, 'no credentials: pod annotations and GC off')
  t.equal(settingsFromEnv({ PINTO_POD_GC_GRACE_SECONDS: '0' }).podGcGraceSeconds, 0, '0 turns it off')
  t.throws(() => settingsFromEnv({ PINTO_POD_GC_GRACE_SECONDS: '15m' }), { message: /^PINTO_POD_GC_GRACE_SECONDS: "15m" is not a whole number/ })
  t.same(settingsFromEnv({ KUBECONFIG: '/etc/k/config', PINTO_DATASTORE: 'etcd://127.0.0.1:2379' }).kube, { kubeconfig: '/etc/k/config' })
  t.same(settingsFromEnv({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }).kube, { inCluster: true })
  t.throws(() => settingsFromEnv({ KUBECONFIG: '/a:/b' }), { message: /^KUBECONFIG: "\/a:\/b": pinto reads one kubeconfig file, not a list/ })
})

t.test('the fan-out: PINTO_FANOUT_ADDRESSES or PINTO_FANOUT_SERVICE, each refused naming itself', async (t) => {
  t.equal(settingsFromEnv({ PINTO_NODENAME: 'n1' }).fanout, undefined, 'none by default: the datastore itself')
  t.same(settingsFromEnv({ PINTO_FANOUT_ADDRESSES: '10.0.0.1:5474, [fd00::1]:5474' }).fanout, { addresses: ['10.0.0.1:5474', '[fd00::1]:5474'] })
  t.same(settingsFromEnv({ PINTO_FANOUT_SERVICE: 'kube-system/pinto-fanout', PINTO_DATASTORE: 'kubernetes' }).fanout, { service: { namespace: 'kube-system', name: 'pinto-fanout' } })
  t.equal(settingsFromEnv({ PINTO_FANOUT_SERVICE: '', PINTO_FANOUT_TOKEN_FILE: '' }).fanout, undefined, 'empty (a ConfigMap key left blank) is unset')
  t.throws(() => settingsFromEnv({ PINTO_FANOUT_ADDRESSES: '10.0.0.1' }), { message: /^PINTO_FANOUT_ADDRESSES: address 1 \("10.0.0.1"\): expected host:port/ })
  t.throws(() => settingsFromEnv({ PINTO_FANOUT_ADDRESSES: '10.0.0.1:0' }), { message: /^PINTO_FANOUT_ADDRESSES: address 1/ })
  t.throws(() => settingsFromEnv({ PINTO_FANOUT_SERVICE: 'pinto-fanout', PINTO_DATASTORE: 'kubernetes' }), { message: /^PINTO_FANOUT_SERVICE: "pinto-fanout": expected namespace\/name/ })
  t.throws(() => settingsFromEnv({ PINTO_FANOUT_SERVICE: 'kube-system/pinto-fanout' }), { message: /^PINTO_FANOUT_SERVICE: a Service is found through the Kubernetes API/ })
  t.throws(() => settingsFromEnv({ PINTO_FANOUT_SERVICE: 'a/b', PINTO_FANOUT_ADDRESSES: '10.0.0.1:5474' }), { message: /^PINTO_FANOUT_SERVICE: set it or PINTO_FANOUT_ADDRESSES, not both/ })
})
