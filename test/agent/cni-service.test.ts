// pinto-node's end of the CNI channel, spoken to directly: requests written to the FIFO as a plugin would,
// answers read from the replies directory. Only cases that make no network state: an ADD for a netns the
// agent cannot see is handed back, a malformed request is answered with the error naming its field, an
// unknown id gets no answer, untaken answers are swept, and close() leaves nothing behind.

import t, { type Test } from 'tap'
import { closeSync, constants, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Registry } from 'prom-client'
import { CniService } from '../../agent/cni-service.js'
import { registerCniMetrics } from '../../agent/metrics.js'
import { warmKind } from '../../agent/warm-runner.js'
import { IpamService } from '../../agent/ipam-service.js'
import { channelPaths } from '../../cni/agent-channel.js'
import { openDatastore } from '../../config/datastore-open.js'
import { waitFor } from '../harness/wait.js'

/** An IPAM service (not listening) over a fresh store, and the socket path its channel goes beside. */
async function service(t: Test): Promise<{ ipam: IpamService; socket: string; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-cnisvc-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const store = await openDatastore(join(dir, 'store'))
  t.teardown(() => store.close())
  const socket = join(dir, 'pinto.sock')
  return { ipam: new IpamService({ store, node: 'n1', socket }), socket, dir }
}

async function setup(t: Test, staleReplyMs?: number): Promise<{ cni: CniService; paths: ReturnType<typeof channelPaths>; dir: string }> {
  const { ipam, socket, dir } = await service(t)
  const cni = new CniService({ socket, ipam, ...(staleReplyMs !== undefined ? { staleReplyMs } : {}) })
  await cni.listen()
  t.teardown(() => cni.close())
  return { cni, paths: channelPaths(socket), dir }
}

function send(requests: string, line: string): void {
  const fd = openSync(requests, constants.O_WRONLY | constants.O_NONBLOCK)
  try {
    writeSync(fd, line + '\n')
  } finally {
    closeSync(fd)
  }
}

function request(id: string, over: Record<string, unknown> = {}): string {
  const conf = { cniVersion: '1.0.0', name: 'k8s-pod-network', type: 'pinto', ipam: { type: 'pinto-ipam' } }
  return JSON.stringify({ v: 1, command: 'ADD', id, pid: process.pid, env: { containerId: 'c1', netns: '/run/netns/pinto-test-no-such-ns', ifname: 'eth0', args: {}, path: [] }, stdin: JSON.stringify(conf), ...over })
}

async function answer(replies: string, id: string): Promise<Record<string, unknown>> {
  const text = await waitFor(() => (existsSync(join(replies, id)) ? readFileSync(join(replies, id), 'utf8') : undefined), { timeoutMs: 10_000, what: `the answer ${id}` })
  return JSON.parse(text) as Record<string, unknown>
}

t.test('an ADD for a netns pinto-node cannot see is handed back untouched', async (t) => {
  const { cni, paths } = await setup(t)
  send(paths.requests, request('r1'))
  t.same(await answer(paths.replies, 'r1'), { fallback: 'pinto-node does not see /run/netns/pinto-test-no-such-ns' })
  t.equal(cni.counts.handedBack, 1)
})

t.test('each request answered is timed in pinto_cni_request_duration_seconds, by command and outcome', async (t) => {
  const { cni, paths } = await setup(t)
  const registry = new Registry()
  cni.onAnswer = registerCniMetrics(registry)
  send(paths.requests, request('m1'))
  send(paths.requests, request('m2', { v: 2 }))
  send(paths.requests, request('m3', { command: 'DEL' }))
  for (const id of ['m1', 'm2', 'm3']) await answer(paths.replies, id)
  await waitFor(() => cni.counts.handedBack + cni.counts.failed === 3 || undefined, { timeoutMs: 5000, what: 'three answers counted' })
  const text = await registry.metrics()
  t.match(text, /^pinto_cni_request_duration_seconds_count\{command="ADD",outcome="handed-back"\} 1$/m, 'the ADD handed back')
  t.match(text, /^pinto_cni_request_duration_seconds_count\{command="ADD",outcome="failed"\} 1$/m, 'the malformed ADD, failed')
  t.match(text, /^pinto_cni_request_duration_seconds_count\{command="DEL",outcome="handed-back"\} 1$/m, 'the DEL')
  t.match(text, /^pinto_cni_request_duration_seconds_bucket\{le="30",command="ADD",outcome="handed-back"\} 1$/m, 'within the last bucket')
})

t.test('a plugin process in another network namespace (or gone) is handed back too', async (t) => {
  const { paths } = await setup(t)
  send(paths.requests, request('r2', { pid: 2 ** 22 + 1 }))
  t.same(await answer(paths.replies, 'r2'), { fallback: 'the plugin runs in another network namespace than pinto-node' })
})

t.test('malformed requests are answered with the field that is wrong; one without a usable id is dropped', async (t) => {
  const { cni, paths } = await setup(t)
  send(paths.requests, request('bad1', { v: 2 }))
  t.match(await answer(paths.replies, 'bad1'), { ok: false, code: 4, msg: 'CNI channel request: version 2 is not 1' })
  send(paths.requests, request('bad2', { env: { containerId: 'c', netns: '/x', ifname: 'eth0', args: { a: 1 }, path: [] } }))
  t.match(await answer(paths.replies, 'bad2'), { ok: false, msg: 'CNI channel request: env.args is not an object of strings' })
  send(paths.requests, request('../escape'))
  send(paths.requests, 'not json at all')
  send(paths.requests, request('after'))
  await answer(paths.replies, 'after')
  t.same(readdirSync(paths.replies).sort(), ['after', 'bad1', 'bad2'], 'nothing written for the id that names another path')
  t.equal(cni.counts.failed, 2)
})

t.test('answers nobody took are swept; close() removes the FIFO and the directory', async (t) => {
  const { cni, paths } = await setup(t, 200)
  writeFileSync(join(paths.replies, 'left-1'), '{}')
  await waitFor(() => !existsSync(join(paths.replies, 'left-1')), { timeoutMs: 10_000, what: 'the untaken answer swept' })
  await cni.close()
  t.notOk(existsSync(paths.requests), 'FIFO gone')
  t.notOk(existsSync(paths.replies), 'replies gone')
})

t.test('which runs a waiting ip serves, and what it reads first', async (t) => {
  t.same(warmKind('ip', ['-batch', '-']), { kind: 'host', head: '' })
  t.same(warmKind('ip', ['-n', 'cni-1234', '-batch', '-']), { kind: 'byName', head: 'cni-1234\n' })
  t.same(warmKind('nsenter', ['--net=/proc/42/ns/net', 'ip', '-batch', '-']), { kind: 'byPath', head: '/proc/42/ns/net\n' })
  t.equal(warmKind('ip', ['link', 'del', 'x']), undefined, 'one-off commands are spawned')
  t.equal(warmKind('ip', ['-j', '-batch', '-']), undefined, 'other options too')
  t.equal(warmKind('ip', ['-n', 'a\nb', '-batch', '-']), undefined, 'a name that would end the first line early')
  t.equal(warmKind('nsenter', ['--net=/x\ny', 'ip', '-batch', '-']), undefined)
})

t.test('a channel that cannot open leaves nothing: no FIFO without a reader, no directory, no status', async (t) => {
  const { ipam, socket, dir } = await service(t)
  const cni = new CniService({ socket, ipam })
  const path = process.env['PATH']
  process.env['PATH'] = '/nonexistent' // no mkfifo to run
  try {
    await t.rejects(cni.listen(), /ENOENT/)
  } finally {
    process.env['PATH'] = path
  }
  t.same(readdirSync(dir).filter((f) => f.startsWith('pinto.sock')), [])
  t.equal(ipam.channelStatus, undefined)
})
