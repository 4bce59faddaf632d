// pintoctl's commands that read (or mend) a datastore, run against an embedded store path that does not
// exist: each says so, naming the path and PINTO_DATASTORE, exits non-zero, and creates nothing there.
// With PINTO_DATASTORE unset, the default path the same. apply, which may start a store, still does.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PINTOCTL, runPintoctl } from './run.js'

const dir = mkdtempSync(join(tmpdir(), 'pinto-nostore-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const POOL = JSON.stringify({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'pods' }, spec: { cidr: '198.18.0.0/24' } })

const COMMANDS: readonly (readonly string[])[] = [
  ['get', 'ippool'],
  ['get', 'ippool', 'pods', '-o', 'yaml'],
  ['get', 'bgppeers', '-o', 'json'],
  ['delete', 'ippool', 'pods'],
  ['delete', '-f', '-'],
  ['ipam', 'show'],
  ['ipam', 'show', '--show-blocks'],
  ['ipam', 'show', '--show-borrowed'],
  ['ipam', 'show', '--ip=198.18.0.1'],
  ['ipam', 'check'],
  ['ipam', 'check', '--repair'],
  ['ipam', 'release', '--ip=198.18.0.1'],
]

for (const [i, args] of COMMANDS.entries()) {
  t.test(`pintoctl ${args.join(' ')}`, async (t) => {
    // Its parent is missing too: neither may be made.
    const store = join(dir, `c${i}`, 'store')
    const r = await runPintoctl(args, { env: { PINTO_DATASTORE: store }, input: POOL })
    t.equal(r.status, 1, `exit 1 (${r.stderr.trim()})`)
    t.match(r.stderr, `the datastore ${store} does not exist (PINTO_DATASTORE=${store})`, 'names the path and the variable')
    t.notOk(existsSync(join(dir, `c${i}`)), 'nothing created on the way')
  })
}

t.test('PINTO_DATASTORE unset: ipam show names the default path and makes nothing there', async (t) => {
  // In a mount namespace of its own over an empty /var/lib, so the machine's /var/lib/pinto is never touched;
  // the listing of /var/lib after the command is the last line of stdout.
  const script = 'mount -t tmpfs pinto-test /var/lib || exit 99; "$0" "$1" ipam show; s=$?; echo "/var/lib: [$(ls -A /var/lib)]"; exit $s'
  const r = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, process.execPath, PINTOCTL], {
    encoding: 'utf8',
    env: { ...process.env, PINTO_DATASTORE: undefined, PINTO_API: undefined },
  })
  t.equal(r.status, 1, `exit 1 (${r.stderr.trim()})`)
  t.match(r.stderr, 'the datastore /var/lib/pinto/store does not exist (PINTO_DATASTORE is not set; /var/lib/pinto/store is its default)')
  t.equal(r.stdout.trim().split('\n').at(-1), '/var/lib: []', 'nothing made under /var/lib')
})

t.test('apply still starts a store where there is none', async (t) => {
  const store = join(dir, 'new', 'store')
  const file = join(dir, 'pool.json')
  writeFileSync(file, POOL)
  const r = await runPintoctl(['apply', '-f', file], { env: { PINTO_DATASTORE: store } })
  t.equal(r.status, 0, r.stderr)
  t.ok(existsSync(store), 'the store is there')
  const get = await runPintoctl(['get', 'ippool', 'pods', '-o', 'json'], { env: { PINTO_DATASTORE: store } })
  t.equal(get.status, 0, get.stderr)
  t.match(JSON.parse(get.stdout), { metadata: { name: 'pods' } }, 'and a reader finds it')
})
