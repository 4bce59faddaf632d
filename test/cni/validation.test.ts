// CNI_CONTAINERID and CNI_IFNAME are checked when the env is read: ADD and CHECK refuse a bad one with code 4
// naming the variable, before anything is allocated or made; DEL of one succeeds at once (nothing of ours
// can have it). DEL with CNI_IFNAME=lo leaves the pod's loopback, and an attachment of the same container.

import t, { type Test } from 'tap'
import { type Lab, createLab, pintoConf } from './lab.js'

async function nothingLeft(t: Test, lab: Lab, podNs: string, what: string): Promise<void> {
  t.same(await lab.links(lab.hostNs), ['lo', 'eth0'], `${what}: no veth on the host`)
  t.same(await lab.links(podNs.replace('/run/netns/', '')), ['lo'], `${what}: nothing in the pod`)
  t.same(await lab.service!.allocations(''), [], `${what}: no allocation`)
}

const BAD_IDS: [string, string, RegExp][] = [
  ['a slash', 'abc/def', /"abc\/def" has "\/" at byte 3/],
  ['shell characters', 'abc;rm -rf x', /has ";" at byte 3/],
  ['a newline', 'abc\ndef', /has "\\n" at byte 3/],
  ['5,000 characters', 'c'.repeat(5000), /has 5000 characters, more than 128/],
  ['a leading dash', '-abc', /has "-" at byte 0/],
  ['129 characters', 'c'.repeat(129), /has 129 characters, more than 128/],
]

const BAD_IFNAMES: [string, string, RegExp][] = [
  ['lo', 'lo', /"lo" is the pod's loopback/],
  ['16 characters', 'e'.repeat(16), /is 16 bytes, more than 15/],
  ['16 bytes in 8 characters', 'é'.repeat(8), /is 16 bytes, more than 15/],
  ['a slash', 'eth/0', /holds '\/', ':' or whitespace/],
  ['a space', 'eth 0', /holds '\/', ':' or whitespace/],
  ['a colon', 'eth0:1', /holds '\/', ':' or whitespace/],
  ['.', '.', /"." is not a name the kernel allows/],
  ['..', '..', /".." is not a name the kernel allows/],
]

t.test('bad CNI_CONTAINERID and CNI_IFNAME: code 4 naming the variable, DEL succeeds, nothing made', async (t) => {
  const lab = await createLab(t)
  const netns = await lab.pod('v')
  const args = 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=val'
  const cases = [
    ...BAD_IDS.map(([what, id, msg]) => ({ what: `CNI_CONTAINERID with ${what}`, variable: 'CNI_CONTAINERID', att: { containerId: id, netns, args }, msg })),
    ...BAD_IFNAMES.map(([what, ifname, msg]) => ({ what: `CNI_IFNAME ${what}`, variable: 'CNI_IFNAME', att: { containerId: 'v1', netns, args, ifname }, msg })),
  ]
  const version = '1.1.0'
  const conf = pintoConf(lab, version, true)
  for (const c of cases) {
    const what = c.what
    const add = await lab.exec('pinto', 'ADD', conf, c.att)
    t.equal(add.code, 1, `${what}: ADD exits 1`)
    t.equal(add.json?.['code'], 4, `${what}: ADD code 4 (${add.stdout.trim().slice(0, 300)})`)
    t.match(String(add.json?.['msg']), new RegExp(`^${c.variable}: `), `${what}: the message names ${c.variable}`)
    t.match(String(add.json?.['msg']), c.msg, `${what}: and says what is wrong`)
    const check = await lab.exec('pinto', 'CHECK', { ...conf, prevResult: { cniVersion: version, ips: [{ address: '198.18.0.9/32' }] } }, c.att)
    t.equal(check.json?.['code'], 4, `${what}: CHECK code 4`)
    for (const plugin of ['pinto', 'pinto-ipam']) {
      const del = await lab.exec(plugin, 'DEL', conf, c.att)
      t.equal(del.code, 0, `${what}: ${plugin} DEL succeeds (${del.stdout.trim().slice(0, 300)})`)
    }
    await nothingLeft(t, lab, netns, what)
  }
  // The ID's limits: 128 characters and letters, digits, '_', '.', '-' are accepted.
  for (const id of ['A'.repeat(128), 'a_b.c-D9']) {
    const add = await lab.exec('pinto', 'ADD', conf, { containerId: id, netns, args })
    t.equal(add.code, 0, `ADD of ${id.slice(0, 20)}: ${add.stdout}`)
    t.equal((await lab.exec('pinto', 'DEL', conf, { containerId: id, netns, args })).code, 0)
    await nothingLeft(t, lab, netns, `ID ${id.slice(0, 20)} added and deleted`)
  }
})

t.test('DEL with CNI_IFNAME=lo succeeds and leaves the pod\'s loopback', async (t) => {
  const lab = await createLab(t)
  const conf = pintoConf(lab, '1.1.0')
  const netns = await lab.pod('lo')
  const ns = netns.replace('/run/netns/', '')
  const att = { containerId: 'lo1', netns, args: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=lo' }
  const loUp = async (): Promise<boolean> => {
    const [lo] = JSON.parse(await lab.ip(ns, ['-j', 'link', 'show', 'dev', 'lo'])) as { flags: string[] }[]
    return lo?.flags.includes('UP') === true
  }

  // Nothing of pinto's in the pod at all.
  const bare = await lab.exec('pinto', 'DEL', conf, { ...att, ifname: 'lo' })
  t.equal(bare.code, 0, `DEL lo of an unwired pod: ${bare.stdout}`)
  t.ok(await loUp(), 'lo is there and up')

  // A pod wired on eth0: DEL lo is another attachment, which pinto never made.
  const add = await lab.exec('pinto', 'ADD', conf, att)
  t.equal(add.code, 0, add.stdout)
  const del = await lab.exec('pinto', 'DEL', conf, { ...att, ifname: 'lo' })
  t.equal(del.code, 0, `DEL lo of a wired pod: ${del.stdout}`)
  t.ok(await loUp(), 'lo is still there and up')
  await lab.topo.exec(ns, 'ping', ['-c', '1', '-W', '2', '127.0.0.1'])
  t.equal((await lab.exec('pinto', 'CHECK', { ...conf, prevResult: add.json }, att)).code, 0, 'eth0 is untouched: CHECK passes')
  t.equal((await lab.service!.allocations('')).length, 1, 'its address is still allocated')
  t.equal((await lab.exec('pinto', 'DEL', conf, att)).code, 0)
  t.same(await lab.links(ns), ['lo'])
  t.ok(await loUp(), 'and after the DEL of eth0')
  t.same(await lab.service!.allocations(''), [])
})
