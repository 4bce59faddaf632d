// pinto-ipam's result for the reference ptp: the longest address length whose prefix covers 169.254.1.1,
// so ptp can add the default route before it makes the gateway reachable.
import t from 'tap'
import { commonPrefixLength, ptpDefault } from '../../cni/ipam-plugin.js'

t.test('leading bits shared with another address', async (t) => {
  t.equal(commonPrefixLength('169.254.1.1', '169.254.1.1'), 32)
  t.equal(commonPrefixLength('198.18.0.5', '169.254.1.1'), 1)
  t.equal(commonPrefixLength('172.16.0.1', '169.254.1.1'), 5)
  t.equal(commonPrefixLength('10.0.0.1', '169.254.1.1'), 0)
  t.equal(commonPrefixLength('255.255.255.255', '0.0.0.0'), 0)
})

t.test('ptp: a default route wherever a prefix of the address can cover the gateway', async (t) => {
  t.same(ptpDefault('198.18.3.7', 26), { length: 1, defaultRoute: true }, '198.18.0.0/15: /1')
  t.same(ptpDefault('192.168.40.2', 26), { length: 1, defaultRoute: true }, "Calico's default pool: /1")
  t.same(ptpDefault('172.16.9.1', 26), { length: 5, defaultRoute: true }, '172.16.0.0/12: /5 (168.0.0.0/5 holds 169.254.1.1)')
  t.same(ptpDefault('10.244.1.5', 26), { length: 26, defaultRoute: false }, '10.0.0.0/8: no prefix can, the block length stays')
  t.same(ptpDefault('169.254.1.5', 26), { length: 26, defaultRoute: true }, 'a block that itself holds the gateway keeps its length')
  t.same(ptpDefault('169.254.1.70', 26), { length: 25, defaultRoute: true }, 'a block next to it: the /25 that holds both')
})
