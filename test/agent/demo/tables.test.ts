// The demo's tables and report on a realistic cluster (3 nodes, 2 pods each, and wider ones): every line fits
// DEMO_WIDTH, no namespace, address or URL is broken (people copy them), and nothing is lost on the way.

import t from 'tap'
import { DEMO_WIDTH, matrixTable, table, wrapCell } from '../../../agent/demo/tables.js'
import { accessReport, stateReport, type StateFacts } from '../../../agent/demo/report.js'

// The longest namespace prefix a demo can have: pid_max is 4194304.
const PREFIX = 'pdm4194304-1594c4'
const NODES = ['node1', 'node2', 'node3']
const ADDRESS: Record<string, string> = { node1: '192.0.2.11', node2: '192.0.2.12', node3: '192.0.2.13' }
const BLOCK: Record<string, string> = { node1: '198.19.197.0/26', node2: '198.19.11.64/26', node3: '198.18.158.128/26' }
const POD_ADDRESSES = ['198.19.197.0', '198.19.197.1', '198.19.11.64', '198.19.11.65', '198.18.158.128', '198.18.158.129']

function tooWide(text: string): string[] {
  return text.split('\n').filter((l) => l.length > DEMO_WIDTH)
}

function facts(opts: { tor?: boolean; tcp?: boolean } = {}): StateFacts {
  const pods = NODES.flatMap((node, i) => [1, 2].map((k) => ({ name: `${node}p${k}`, node, address: POD_ADDRESSES[i * 2 + k - 1] ?? '' })))
  return {
    peers: NODES.map((node) => ({
      node,
      source: opts.tcp === true ? 'tcp' : 'api',
      rows: [
        ...NODES.filter((x) => x !== node).map((x) => ({ name: `mesh-${x}`, address: ADDRESS[x] ?? '', type: 'mesh', state: 'Established', since: '2026-12-06T10:54:11.299Z' })),
        ...(opts.tor === true ? [{ name: 'tor-192.0.2.1', address: '192.0.2.1', type: 'external', state: 'Established', since: '2026-12-06T10:54:12.004Z' }] : []),
      ],
    })),
    ...(opts.tor === true ? { tor: { address: '192.0.2.1', as: 65000, sessions: new Map(NODES.map((n) => [n, 'Established'])), learned: Object.values(BLOCK) } } : {}),
    routes: NODES.map((node) => ({
      node,
      rows: NODES.map((x) => (x === node ? { prefix: BLOCK[x] ?? '', type: 'blackhole', via: 'blackhole' } : { prefix: BLOCK[x] ?? '', type: 'unicast', via: `via ${ADDRESS[x]} dev eth0` })),
    })),
    pods,
  }
}

function access(): Parameters<typeof accessReport>[0] {
  return {
    apiPort: 9099,
    nodes: NODES.map((name, i) => ({ name, address: ADDRESS[name] ?? '', ns: `${PREFIX}-${name}`, page: `http://127.0.0.1:${9101 + i}/` })),
    logs: '/tmp/pinto-demo-1594c4-ox0FPy/nodeN/pinto-node.log',
    podNs: `${PREFIX}-node1p1`,
  }
}

t.test('3 nodes, 2 pods each: every table and line of the report fits', async (t) => {
  for (const [what, text] of [
    ['peers, routes, pods', stateReport(facts())],
    ['with a BIRD top-of-rack', stateReport(facts({ tor: true }))],
    ['peers from TCP sessions', stateReport(facts({ tcp: true }))],
    ['ping matrix', matrixTable(POD_ADDRESSES.map((_, i) => `node${Math.floor(i / 2) + 1}p${(i % 2) + 1}`), () => true, { maxWidth: DEMO_WIDTH })],
    ['access', accessReport(access())],
  ] as const) {
    t.same(tooWide(text), [], `${what}: no line over ${DEMO_WIDTH} columns`)
  }
})

t.test('the access table keeps namespaces and URLs whole, one row per node', async (t) => {
  const text = accessReport(access())
  for (const [i, n] of NODES.entries()) {
    t.match(text, new RegExp(`^\\| ${n} +\\| ${ADDRESS[n]?.replace(/\./g, '\\.')} +\\| ${PREFIX}-${n} +\\| http://127\\.0\\.0\\.1:${9101 + i}/ +\\|$`, 'm'), `${n}'s row`)
  }
  t.match(text, `ip netns exec ${PREFIX}-node1 curl -s http://127.0.0.1:9099/v1/peers`, 'a REST API command to copy')
  t.match(text, 'ssh -L 9101:127.0.0.1:9101 THIS-HOST, then open http://127.0.0.1:9101/')
  t.match(text, /chromium --headless .*\\\n +--virtual-time-budget=5000 .*--screenshot=\/tmp\/node1\.png \\\n +http:\/\/127\.0\.0\.1:9099\/\n/, 'the chromium command continued over lines, as a shell reads it')
  t.match(text, `a pod's shell: ip netns exec ${PREFIX}-node1p1 sh`)
})

t.test('the peers table holds every session in full', async (t) => {
  const text = stateReport(facts({ tor: true }))
  t.match(text, /^\| node1 +\| mesh-node2 +\| 192\.0\.2\.12 +\| mesh +\| Established +\| 2026-12-06T10:54:11\.299Z +\|$/m)
  t.match(text, /^\| node3 +\| tor-192\.0\.2\.1 +\| 192\.0\.2\.1 +\| external +\| Established +\|/m)
  t.match(text, /^\| node2 +\| 198\.19\.11\.64\/26 +\| blackhole \(own block\) +\|$/m)
})

t.test('a table too wide wraps its long cells at spaces, keeping every word', async (t) => {
  const long = 'via 192.0.2.12 dev eth0, via 192.0.2.13 dev eth0, via 192.0.2.14 dev eth0, via 192.0.2.15 dev eth0'
  const text = table(['node', 'prefix', 'next hop'], [['node1', '198.18.0.0/26', long]], { maxWidth: 60 })
  t.same(tooWide(text).filter((l) => l.length > 60), [])
  const cells = text.split('\n').filter((l) => l.startsWith('| ') && !l.includes('next hop')).map((l) => l.split('|')[3]?.trim()).join(' ')
  t.equal(cells, long, 'the cell reads the same, line after line')
  t.match(text, /^\| node1 \| 198\.18\.0\.0\/26 \| via 192\.0\.2\.12/m, 'the row starts on one line')
  t.match(text, /^\|       \|               \| 192\.0\.2\.13 dev eth0, via +\|$/m, 'and continues under its own column')
})

t.test('a matrix with more columns than fit is split, the source column repeated', async (t) => {
  const names = Array.from({ length: 12 }, (_, i) => `node${Math.floor(i / 2) + 1}p${(i % 2) + 1}`)
  const text = matrixTable(names, (a, b) => !(a === 'node1p1' && b === 'node6p2'), { maxWidth: DEMO_WIDTH })
  t.same(tooWide(text), [])
  const tables = text.split('\n\n')
  t.ok(tables.length >= 2, `${tables.length} tables`)
  const headers = tables.map((x) => x.split('\n')[1] ?? '')
  for (const h of headers) t.match(h, /^\| from \\ to \|/, 'each starts with the sources')
  t.same(headers.flatMap((h) => h.split('|').slice(2, -1).map((c) => c.trim())), names, 'every destination once, in order')
  t.match(tables.at(-1) ?? '', /^\| node1p1 +\|.*\| FAIL +\|$/m, 'a failure is in the last part, on its source row')
})

t.test('narrow enough and nothing changes; a word longer than the room is cut as a last resort', async (t) => {
  const rows = [['a', 'b']]
  t.equal(table(['x', 'y'], rows, { maxWidth: 100 }), table(['x', 'y'], rows), 'no limit reached, the same table')
  t.same(wrapCell('abcdefghij', 4), ['abcd', 'efgh', 'ij'])
  t.same(wrapCell('ab cd ef', 5), ['ab cd', 'ef'])
  const text = table(['k', 'v'], [['key', 'x'.repeat(50)]], { maxWidth: 30 })
  t.same(text.split('\n').filter((l) => l.length > 30), [])
  t.equal(text.split('\n').filter((l) => l.startsWith('| ')).slice(1).map((l) => l.split('|')[2]?.trim()).join(''), 'x'.repeat(50), 'the cut word, whole when read on')
})
