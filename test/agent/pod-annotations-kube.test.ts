// Calico's CNI annotations honoured by a real agent on the kubernetes datastore, the pods made with kubectl on a
// real kube-apiserver: ipv4pools on the pod and on its namespace (the pod's wins), ipAddrs as a fixed address (and
// refused while another pod holds it), bad annotations refused naming the annotation and the pod with nothing
// left behind, podIP / podIPs / containerID written after the ADD and cleared by the DEL of that container only,
// written by a restarted agent when the write was refused until the last one was killed, cleared by a release the
// recovery queue makes late as by a DEL, and the pod GC on this datastore: a force-deleted pod's address freed after
// the grace period. Writes are refused with a ValidatingAdmissionPolicy (no webhook), lifted when the test is done.
import t from 'tap'
import { IpamClient } from '../../cni/ipam-client.js'
import type { KubeApiserver } from '../harness/kube-apiserver.js'
import { waitFor } from '../harness/wait.js'
import { NETWORK, addressOf, kubePodLab } from './kube-pods-lab.js'

const A = 'cni.projectcalico.org'
const L = await kubePodLab(t, 'kubernetes', [
  { name: 'default-v4', cidr: '198.18.0.0/24' },
  { name: 'gold', cidr: '198.18.1.0/24' },
  { name: 'silver', cidr: '198.18.2.0/24' },
  { name: 'off', cidr: '198.18.3.0/24', disabled: true },
], { PINTO_POD_GC_GRACE_SECONDS: '3' })
/**
 * Refuses (403) UPDATEs and PATCHes of `resource` whose object matches `deny` (CEL), through a ValidatingAdmissionPolicy;
 * resolves once the apiserver applies it (a server-side dry run of `probe` is refused) to a function lifting it
 * (resolving once `probe` passes again), also run at t's teardown.
 */
async function refuseWrites(t: { teardown(fn: () => unknown): void }, api: KubeApiserver, name: string, rule: { apiGroup: string; resource: string }, deny: string, probe: string[]): Promise<() => Promise<void>> {
  const [apiGroup, apiVersion] = rule.apiGroup === '' ? ['', 'v1'] : [rule.apiGroup, 'v1']
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ apiGroups: [apiGroup], apiVersions: [apiVersion], operations: ['UPDATE'], resources: [rule.resource] }] },
      validations: [{ expression: `!(${deny})`, reason: 'Forbidden', message: `refused by the test's policy ${name}` }],
    },
  }
  const binding = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name }, spec: { policyName: name, validationActions: ['Deny'] } }
  await api.kubectlWithInput(JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [policy, binding] }), 'apply', '-f', '-')
  const refused = async (): Promise<boolean> => api.kubectl(...probe, '--dry-run=server').then(() => false, (err: Error) => new RegExp(name).test(err.message))
  await waitFor(refused, { timeoutMs: 60_000, intervalMs: 250, what: `policy ${name} applied` })
  let lifted = false
  const lift = async (): Promise<void> => {
    if (lifted) return
    lifted = true
    await api.kubectl('delete', 'validatingadmissionpolicybinding', name, '--ignore-not-found')
    await api.kubectl('delete', 'validatingadmissionpolicy', name, '--ignore-not-found')
    await waitFor(async () => !(await refused()), { timeoutMs: 60_000, intervalMs: 250, what: `policy ${name} lifted` })
  }
  t.teardown(lift)
  return lift
}

if ('skip' in L) t.comment(`skipped: ${L.skip}`)
else {
  await L.namespace('plain')
  await L.namespace('silvered', { [`${A}/ipv4pools`]: '["silver"]' })

  t.test('ipv4pools: on the pod, on its namespace, and the pod\'s over the namespace\'s', async (t) => {
    await L.pod('plain', 'gold-pod', { annotations: { [`${A}/ipv4pools`]: '["gold"]' } })
    await L.pod('silvered', 'from-ns')
    await L.pod('silvered', 'own-choice', { annotations: { [`${A}/ipv4pools`]: '["198.18.1.0/24"]' } })
    const cases: [string, string, string, RegExp][] = [
      ['plain', 'gold-pod', 'c0ffee01', /^198\.18\.1\./],
      ['silvered', 'from-ns', 'c0ffee02', /^198\.18\.2\./],
      ['silvered', 'own-choice', 'c0ffee03', /^198\.18\.1\./],
    ]
    for (const [ns, name, id, want] of cases) {
      const r = await L.cni('ADD', ns, name, id)
      t.equal(r.code, 0, `ADD ${ns}/${name}: ${r.stdout}${r.stderr}`)
      t.match(addressOf(r), want, `${ns}/${name} got ${addressOf(r)}`)
    }
  })

  t.test('ipAddrs: exactly that address; a second pod asking for it is refused, naming it, and holds nothing', async (t) => {
    await L.pod('plain', 'fixed', { annotations: { [`${A}/ipAddrs`]: '["198.18.0.77"]', [`${A}/ipv4pools`]: '["gold"]' } })
    const r = await L.cni('ADD', 'plain', 'fixed', 'f1xed001')
    t.equal(r.code, 0, r.stdout)
    t.equal(addressOf(r), '198.18.0.77', 'the annotated address, not one of the pools\'')
    t.same(await L.held('f1xed001'), ['198.18.0.77'])
    t.equal((await L.cni('ADD', 'plain', 'fixed', 'f1xed001')).code, 0, 'a repeated ADD gets it again')
    await L.pod('plain', 'copycat', { annotations: { [`${A}/ipAddrs`]: '["198.18.0.77"]' } })
    const again = await L.cni('ADD', 'plain', 'copycat', 'c0pycat1')
    t.not(again.code, 0)
    t.match(again.json?.['msg'], /annotation cni\.projectcalico\.org\/ipAddrs=\["198\.18\.0\.77"\] on pod plain\/copycat: address 198\.18\.0\.77 is already assigned/)
    t.same(await L.held('c0pycat1'), [], 'the refused pod holds nothing')
  })

  t.test('bad annotations: refused naming the annotation and the pod; nothing assigned, nothing wired', async (t) => {
    const bad: [string, Record<string, string>, RegExp][] = [
      ['no-such-pool', { [`${A}/ipv4pools`]: '["nope"]' }, /ipv4pools=\["nope"\] on pod plain\/no-such-pool: IP pool "nope" does not exist/],
      ['disabled-pool', { [`${A}/ipv4pools`]: '["off"]' }, /ipv4pools=\["off"\] on pod plain\/disabled-pool: IP pool off \(198\.18\.3\.0\/24\) is disabled/],
      ['not-json', { [`${A}/ipv4pools`]: 'gold' }, /ipv4pools=gold on pod plain\/not-json: not JSON/],
      ['outside', { [`${A}/ipAddrs`]: '["203.0.113.9"]' }, /ipAddrs=\["203\.0\.113\.9"\] on pod plain\/outside: 203\.0\.113\.9 is outside every IP pool/],
      ['no-ipam', { [`${A}/ipAddrsNoIpam`]: '["198.18.0.99"]' }, /ipAddrsNoIpam=\["198\.18\.0\.99"\] on pod plain\/no-ipam: not supported/],
    ]
    const before = await L.lab.links(L.lab.hostNs)
    for (const [name, annotations, want] of bad) {
      await L.pod('plain', name, { annotations })
      const id = `bad${name.replace(/-/g, '').slice(0, 10)}`
      const r = await L.cni('ADD', 'plain', name, id)
      t.equal(r.json?.['code'], 7, `${name}: a config error (7): ${r.stdout}`)
      t.match(r.json?.['msg'], want, name)
      t.same(await L.held(id), [], `${name}: nothing held`)
    }
    await L.namespace('badns', { [`${A}/ipv4pools`]: '["nope"]' })
    await L.pod('badns', 'victim')
    const r = await L.cni('ADD', 'badns', 'victim', 'badnsvictim')
    t.match(r.json?.['msg'], /ipv4pools=\["nope"\] on namespace badns \(of pod badns\/victim\): IP pool "nope" does not exist/, 'the namespace\'s named, with the pod')
    t.same(await L.held('badnsvictim'), [])
    t.same(await L.lab.links(L.lab.hostNs), before, 'no host veth left')
  })

  t.test('podIP, podIPs and containerID written after the ADD; cleared by that container\'s DEL only', async (t) => {
    await L.pod('plain', 'annotated')
    const r = await L.cni('ADD', 'plain', 'annotated', 'a11ce001')
    t.equal(r.code, 0, r.stdout)
    const ip = addressOf(r)
    const written = await waitFor(async () => {
      const a = await L.annotations('plain', 'annotated')
      return a?.[`${A}/podIP`] !== undefined ? a : undefined
    }, { timeoutMs: 20_000, what: 'the podIP annotation' })
    t.equal(written[`${A}/podIP`], `${ip}/32`)
    t.equal(written[`${A}/podIPs`], `${ip}/32`)
    t.equal(written[`${A}/containerID`], 'a11ce001')

    // A DEL of an older sandbox of the pod leaves the annotations of the current one.
    t.equal((await L.cni('DEL', 'plain', 'annotated', '01dc0001')).code, 0)
    t.equal((await L.cni('DEL', 'plain', 'annotated', 'a11ce001')).code, 0)
    const cleared = await waitFor(async () => {
      const a = await L.annotations('plain', 'annotated')
      return a?.[`${A}/podIP`] === '' ? a : undefined
    }, { timeoutMs: 20_000, what: 'the podIP annotation cleared' })
    t.equal(cleared[`${A}/podIPs`], '')
    t.equal(cleared[`${A}/containerID`], 'a11ce001', 'containerID kept, as Calico keeps it')

    // The old sandbox's DEL comes after a new one's ADD: the new one's annotations stay.
    const again = await L.cni('ADD', 'plain', 'annotated', 'a11ce002')
    await waitFor(async () => (await L.annotations('plain', 'annotated'))?.[`${A}/containerID`] === 'a11ce002', { timeoutMs: 20_000, what: 'the new sandbox\'s annotations' })
    t.equal((await L.cni('DEL', 'plain', 'annotated', 'a11ce001')).code, 0)
    await L.pod('plain', 'marker')
    t.equal((await L.cni('ADD', 'plain', 'marker', 'ma4ke401')).code, 0)
    await waitFor(async () => (await L.annotations('plain', 'marker'))?.[`${A}/podIP`] !== undefined, { timeoutMs: 20_000, what: 'a later pod\'s annotations (the DEL before it has been dealt with)' })
    t.equal((await L.annotations('plain', 'annotated'))?.[`${A}/podIP`], `${addressOf(again)}/32`, 'not cleared by the old sandbox\'s DEL')
  })

  t.test('podIP annotations the last run could not write are written by the next one, from IPAM', async (t) => {
    await L.pod('plain', 'lost')
    const probe = ['-n', 'plain', 'patch', 'pod', 'lost', '--subresource=status', '--type=merge', '-p', '{"metadata":{"annotations":{"probe":"1"}}}']
    const lift = await refuseWrites(t, L.api, 'pinto-test-refuse-pod-status', { apiGroup: '', resource: 'pods/status' }, 'object.metadata.name == "lost"', probe)
    const r = await L.cni('ADD', 'plain', 'lost', '1057a001')
    t.equal(r.code, 0, `the ADD succeeds while its pod's annotations cannot be written: ${r.stdout}`)
    await waitFor(() => /writing the pod's cni\.projectcalico\.org annotations failed/.test(L.agent.log()), { timeoutMs: 20_000, what: 'the refused patch' })
    await L.restartAgent()
    await lift()
    const a = await waitFor(async () => {
      const got = await L.annotations('plain', 'lost')
      return got?.[`${A}/podIP`] !== undefined ? got : undefined
    }, { timeoutMs: 30_000, what: 'the podIP annotation written by the restarted agent' })
    t.equal(a[`${A}/podIP`], `${addressOf(r)}/32`)
    t.equal(a[`${A}/podIPs`], `${addressOf(r)}/32`)
    t.equal(a[`${A}/containerID`], '1057a001')
    t.match(L.agent.log(), /podIP annotations an earlier run left unwritten/)
  })

  t.test('a release the recovery queue makes after a failed DEL clears podIP as the DEL would', async (t) => {
    await L.pod('plain', 'late')
    const ipam = new IpamClient(L.lab.socket)
    const handle = `${NETWORK}.1a7e0001`
    const got = await ipam.assign({ handle, num4: 1, num6: 0, attrs: { namespace: 'plain', pod: 'late', containerID: '1a7e0001', ifname: 'eth0' } })
    const ip = got.ipv4[0]?.address
    await waitFor(async () => (await L.annotations('plain', 'late'))?.[`${A}/podIP`] === `${ip}/32`, { timeoutMs: 20_000, what: 'the podIP annotation' })
    const block = (await L.api.kubectl('get', 'ipamblocks.crd.projectcalico.org', '-o', 'jsonpath={.items[0].metadata.name}')).trim()
    const probe = ['patch', 'ipamblocks.crd.projectcalico.org', block, '--type=merge', '-p', '{"metadata":{"annotations":{"probe":"1"}}}']
    const lift = await refuseWrites(t, L.api, 'pinto-test-refuse-blocks', { apiGroup: 'crd.projectcalico.org', resource: 'ipamblocks' }, 'true', probe)
    await t.rejects(ipam.releaseByHandle(handle), 'the DEL\'s release fails while the blocks cannot be written')
    t.equal((await L.annotations('plain', 'late'))?.[`${A}/podIP`], `${ip}/32`, 'nothing cleared yet')
    await lift()
    await waitFor(async () => (await L.held('1a7e0001')).length === 0, { timeoutMs: 30_000, intervalMs: 250, what: 'the queued release made' })
    const a = await waitFor(async () => {
      const now = await L.annotations('plain', 'late')
      return now?.[`${A}/podIP`] === '' ? now : undefined
    }, { timeoutMs: 20_000, what: 'the podIP annotation cleared after the late release' })
    t.equal(a[`${A}/podIPs`], '')
    t.equal(a[`${A}/containerID`], '1a7e0001', 'containerID kept, as a DEL keeps it')
  })

  t.test('pod GC on the kubernetes datastore: a force-deleted pod\'s address is freed, the others\' kept', async (t) => {
    await L.pod('plain', 'forced')
    t.equal((await L.cni('ADD', 'plain', 'forced', 'f04ced01')).code, 0)
    await L.forceDeleteUntilFreed('plain', 'forced', 'f04ced01')
    t.same(await L.held('f1xed001'), ['198.18.0.77'], 'the living pod with a fixed address keeps it')
    t.equal((await L.held('c0ffee01')).length, 1, 'and so does every other living pod')
  })
}
