// The status page in a real headless Chromium inside a node's namespace (Debian's chromium driven by
// playwright-core), against a 3-node cluster with a BIRD top-of-rack: every session shows Established
// with the kernel's route count, and a peer killed with SIGKILL shows as down within seconds.
// The demo's host-side forward to the page is checked too. Screenshots go to a temp dir, kept (and named
// in the output, with one of the moment of failure) when the test fails or PINTO_KEEP_SCREENSHOTS=1;
// PINTO_UPDATE_DOCS=1 also copies one to docs/status-page.png.

import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { API_PORT, birdInstalled } from '../../agent/demo/cluster.js'
import { forwardIntoNamespace } from '../../agent/demo/forward.js'
import { kernelRoutes, waitConverged } from '../../agent/demo/observe.js'
import { TOR_PREFIX } from '../../agent/demo/tor.js'
import { waitFor } from '../harness/wait.js'
import { makeCluster } from './cluster.js'

const CHROMIUM = '/usr/bin/chromium'
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const bird = await birdInstalled()
const skip = !existsSync(CHROMIUM) ? `${CHROMIUM} is missing (Debian package chromium; node scripts/install-deps.js installs it)` : !bird ? 'bird2 is not installed' : false

/** Chromium in a namespace: playwright execs this wrapper, which keeps the pipe fds it talks over. */
async function browserIn(t: Test, ns: string): Promise<{ context: BrowserContext; shots: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-status-page-'))
  const shots = mkdtempSync(join(tmpdir(), 'pinto-status-shots-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const wrapper = join(dir, 'chromium-in-netns')
  writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec ${ns} ${CHROMIUM} "$@"\n`)
  chmodSync(wrapper, 0o755)
  const context = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: wrapper,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 1250 },
    timeout: 60_000,
  })
  t.teardown(() => context.close())
  return { context, shots }
}

const stateOf = (page: Page, peer: string): Promise<string | null> => page.locator(`#sessions tr[data-peer="${peer}"] td.state`).textContent({ timeout: 1000 }).catch(() => null)

t.test('status page in headless Chromium: sessions, routes, and a peer going down', { skip }, async (t) => {
  const c = await makeCluster(t, { nodes: 3, tor: true })
  // A pod per node (two on node1), so each node has a block and routes to the others'.
  for (const n of c.nodes) await c.addPod(n)
  await c.addPod(c.node('node1'))
  await waitConverged(c, 30_000, ['203.0.113.1'])
  const node1 = c.node('node1')
  const { context, shots } = await browserIn(t, node1.ns)
  const page = context.pages()[0] ?? (await context.newPage())
  t.teardown(async () => {
    if (!t.passing()) await page.screenshot({ path: join(shots, 'failure.png'), fullPage: true }).catch(() => undefined)
    if (t.passing() && process.env['PINTO_KEEP_SCREENSHOTS'] !== '1') rmSync(shots, { recursive: true, force: true })
    else process.stderr.write(`status page screenshots: ${shots}\n`)
  })
  const failed: string[] = []
  page.on('requestfailed', (r) => failed.push(r.url()))
  page.on('pageerror', (e) => failed.push(`page error: ${e.message}`))
  await page.goto(`http://127.0.0.1:${API_PORT}/`)

  const peers = ['mesh-node2', 'mesh-node3']
  const established = await waitFor(async () => {
    const rows = await page.locator('#sessions tr[data-peer]').evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-peer'), tr.querySelector('td.state')?.textContent]))
    return rows.length === 3 && rows.every(([, s]) => s === 'Established') ? rows : undefined
  }, { timeoutMs: 20_000, what: 'the page to show 3 sessions Established' })
  t.same(established.map(([p]) => p).filter((p) => peers.includes(p ?? '')), peers, 'both mesh peers listed, and the ToR')
  t.equal(await page.locator('#node-name').textContent(), 'node1', 'the header names the node')
  t.equal(await page.locator('#fact-asn').textContent(), '64512')
  t.equal(await page.locator('#card-sessions .value').textContent(), '3/3')
  t.equal(await page.locator('#blocks tbody tr').count(), 3, 'one IPAM block per node')
  t.match(await page.locator('#blocks tr.mine').textContent(), /2 \/ 64/, "node1's block has its two pods")

  // The FIB card counts felix's routes: the kernel's pinto routes in node1's namespace.
  const kernel = await kernelRoutes(node1.ns)
  const shown = await waitFor(async () => {
    const v = await page.locator('#card-fib .value').textContent()
    return v === String(kernel.length) ? v : undefined
  }, { timeoutMs: 10_000, what: `the page's kernel route count to be ${kernel.length}` })
  t.equal(shown, String(kernel.length), `kernel routes: ${kernel.map((r) => r.prefix).join(', ')}`)
  t.equal(await page.locator('#routes tbody tr').count(), kernel.length, 'the routes table lists each')

  // Searching by prefix narrows the table to the ToR's route.
  await page.fill('#route-prefix', TOR_PREFIX)
  await page.click('#route-search button')
  await waitFor(async () => (await page.locator('#routes tbody tr').count()) === 1, { timeoutMs: 5000, what: `the search for ${TOR_PREFIX}` })
  t.equal(await page.locator('#routes tbody tr td').first().textContent(), TOR_PREFIX, 'search finds the ToR route')
  t.ok((await page.locator('#topology svg g.box').count()) >= 4, 'topology draws node1, node2, node3 and the ToR')
  t.equal(await page.locator('#topology svg g.box.external.up').count(), 1, 'the ToR box is up')
  await page.fill('#route-prefix', '')
  await page.click('#route-search button')
  await waitFor(async () => (await page.locator('#routes tbody tr').count()) === kernel.length, { timeoutMs: 5000, what: 'the full routes table again' })
  // The demo's forward: the same page from the host's loopback, through `ip netns exec`.
  const fwd = await forwardIntoNamespace(node1.ns, API_PORT, 0)
  t.teardown(() => fwd.close())
  const viaHost = (await (await fetch(new URL('/v1/status', fwd.url))).json()) as { node: string }
  t.equal(viaHost.node, 'node1', `the host reaches node1's API at ${fwd.url}`)
  t.match(await (await fetch(fwd.url)).text(), /<script type="module" src="\/ui\/app\.js">/, 'and its page')
  const upShot = join(shots, 'status-page-established.png')
  await page.screenshot({ path: upShot, fullPage: true })

  // node2 dies without a NOTIFICATION: its kernel closes the connection and node1's page says so.
  const killedAt = Date.now()
  await c.stopAgent(c.node('node2'), 'SIGKILL')
  const down = await waitFor(async () => {
    const s = await stateOf(page, 'mesh-node2')
    return s !== null && s !== 'Established' ? s : undefined
  }, { timeoutMs: 8000, intervalMs: 100, what: 'the page to show mesh-node2 down' })
  t.comment(`the page showed mesh-node2 ${down} ${Date.now() - killedAt} ms after SIGKILL`)
  t.not(down, 'Established')
  t.equal(await stateOf(page, 'mesh-node3'), 'Established', 'the other sessions stay up')
  await waitFor(async () => (await page.locator('#events li').first().textContent())?.includes('mesh-node2') === true, { timeoutMs: 5000, what: 'the events list to show mesh-node2 leaving Established' })
  t.match(await page.locator('#events li').first().textContent(), /mesh-node2Established →/, 'the newest event is node2 leaving Established')
  t.equal(await page.locator('#card-sessions .value').textContent(), '2/3')
  const downShot = join(shots, 'status-page-peer-down.png')
  await page.screenshot({ path: downShot, fullPage: true })
  t.same(failed, [], 'every request the page made was answered (nothing from outside the node)')
  if (process.env['PINTO_UPDATE_DOCS'] === '1') copyFileSync(downShot, join(ROOT, 'docs', 'status-page.png'))
})
