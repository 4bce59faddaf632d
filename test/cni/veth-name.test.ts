// Host veth names as Calico derives them: prefix + hex(sha1("namespace.pod")) cut to 15 characters, checked
// against node:crypto's SHA-1 (the plugin carries its own to start faster); another interface has its own.
import t from 'tap'
import { createHash } from 'node:crypto'
import { IFNAMSIZ_MAX, vethName } from '../../cni/veth-name.js'

const sha1 = (s: string): string => createHash('sha1').update(s).digest('hex')

t.test('vethName', async (t) => {
  t.equal(vethName('cali', { namespace: 'default', pod: 'nginx' }, 'c1', 'eth0'), ('cali' + sha1('default.nginx')).slice(0, 15))
  t.equal(vethName('pinto', { namespace: 'kube-system', pod: 'coredns-5d78c9869d-abcde' }, 'c1', 'eth0'), ('pinto' + sha1('kube-system.coredns-5d78c9869d-abcde')).slice(0, 15))
  t.equal(vethName('pinto', undefined, 'f3a1b2c3d4e5', 'eth0'), ('pinto' + sha1('f3a1b2c3d4e5')).slice(0, 15), 'the container id without a pod identity')
  // Every length SHA-1 pads differently around (55, 56, 64 bytes), and a multi-byte character.
  for (const n of [0, 1, 55, 56, 63, 64, 65, 119, 120, 200]) {
    const pod = 'p'.repeat(n)
    t.equal(vethName('', { namespace: 'ns', pod }, '', 'eth0'), sha1(`ns.${pod}`).slice(0, 15), `${n + 3} bytes`)
  }
  t.equal(vethName('', { namespace: 'ns', pod: 'é' }, '', 'eth0'), sha1('ns.é').slice(0, 15))
  t.equal(vethName('pinto', { namespace: 'a', pod: 'b' }, '', 'eth0').length, IFNAMSIZ_MAX)
})

t.test('each interface of a pod has its own veth name; the primary one keeps Calico\'s', async (t) => {
  const pod = { namespace: 'default', pod: 'nginx' }
  t.equal(vethName('cali', pod, 'c1', 'eth1'), ('cali' + sha1('default.nginx:eth1')).slice(0, 15))
  t.equal(vethName('cali', undefined, 'c1', 'net1'), ('cali' + sha1('c1:net1')).slice(0, 15))
  const names = new Set(['eth0', 'eth1', 'net1'].map((ifname) => vethName('pinto', pod, 'c1', ifname)))
  t.equal(names.size, 3, 'three interfaces, three names')
  // A pod whose name ends like an interface suffix never meets another pod's second interface.
  t.not(vethName('pinto', { namespace: 'default', pod: 'nginx.eth1' }, 'c1', 'eth0'), vethName('pinto', pod, 'c1', 'eth1'))
})
