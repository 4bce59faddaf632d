// /v1/routes pagination over a 100k-route Loc-RIB originated in a real speaker: walking the pages
// serves every route exactly once in prefix order, and a cursor stays good while routes come and go
// (those present throughout still appear exactly once). Timing is bench/api-routes.ts's job, not this.
import t, { type Test } from 'tap'
import { Registry } from 'prom-client'
import { BgpSpeaker, formatPrefix, ipv4Prefix, parsePrefix } from '../../../bgp/index.js'
import { buildApi, speakerReads, type ApiDeps } from '../../../agent/api/index.js'
import { compareKeys } from '../../../agent/api/paginate.js'

const N = 100_000
const BASE = 0xc6120000 // 198.18.0.0

/** 100k prefixes of mixed lengths, so ties on address (198.18.0.0/26 and /32) are exercised. */
function prefixText(i: number): string {
  return i % 10 === 0 ? formatPrefix(ipv4Prefix((BASE + i * 64) >>> 0, 26)) : formatPrefix(ipv4Prefix((BASE + i) >>> 0, 32))
}

async function setup(t: Test) {
  const speaker = new BgpSpeaker({ asn: 64512, routerId: '192.0.2.1', listen: false })
  t.teardown(() => speaker.stop())
  const names = new Set<string>()
  for (let i = 0; i < N; i++) {
    const text = prefixText(i)
    if (names.has(text)) continue
    names.add(text)
    speaker.rib.originate(parsePrefix(text))
  }
  for (const v6 of ['2001:db8::/64', '2001:db8:0:1::/64', '2001:db8::/48']) {
    names.add(v6)
    speaker.rib.originate(parsePrefix(v6))
  }
  speaker.rib.flush()
  const deps: ApiDeps = {
    node: 'bench',
    uptimeSeconds: () => speaker.uptimeSeconds,
    bgp: speakerReads(speaker),
    ipam: { blocks: async () => [], pools: async () => [] },
    readiness: { startupWindowSeconds: 30 },
    metrics: new Registry(),
  }
  const app = await buildApi(deps)
  t.teardown(() => app.close())
  return { speaker, app, names }
}

interface PageBody {
  total: number
  nextCursor: string | null
  routes: { prefix: string }[]
}

const key = (text: string) => parsePrefix(text)

t.test('every route exactly once, in prefix order, IPv4 before IPv6', async (t) => {
  const { app, names } = await setup(t)
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const r = await app.inject({ url: `/v1/routes?limit=5000${cursor !== null ? `&cursor=${cursor}` : ''}` })
    t.equal(r.statusCode, 200)
    const body: PageBody = r.json()
    if (body.total !== names.size) t.equal(body.total, names.size, 'total counts every route on every page')
    seen.push(...body.routes.map((x) => x.prefix))
    cursor = body.nextCursor
    pages++
  } while (cursor !== null && pages < 100)
  t.equal(pages, Math.ceil(names.size / 5000))
  t.equal(seen.length, names.size, 'as many rows as routes')
  t.equal(new Set(seen).size, seen.length, 'no route twice')
  t.ok(seen.every((p) => names.has(p)), 'only real routes')
  let ordered = true
  for (let i = 1; i < seen.length; i++) if (compareKeys(key(seen[i - 1]!), key(seen[i]!)) >= 0) ordered = false
  t.ok(ordered, 'strictly increasing keys')
  t.same(seen.slice(0, 2), ['198.18.0.0/26', '198.18.0.1/32'], 'a shorter prefix before the longer one at the same address')
  t.same(seen.slice(-3), ['2001:db8::/48', '2001:db8::/64', '2001:db8:0:1::/64'])
})

t.test('a cursor survives routes coming and going between pages', async (t) => {
  const { app, speaker, names } = await setup(t)
  const limit = 1000
  const first = (await app.inject({ url: `/v1/routes?limit=${limit}&prefix=198.18.0.0/16` })).json<PageBody>()
  const served = first.routes.map((r) => r.prefix)
  const boundary = served[served.length - 1]!
  // Withdraw some already served and some not yet; add some before the cursor and some after it.
  const gone = [served[10]!, served[500]!, '198.18.100.1/32', '198.18.200.3/32']
  for (const p of gone) speaker.withdraw(parsePrefix(p))
  const addedBefore = '198.18.0.0/25'
  const addedAfter = '198.18.200.0/25'
  t.notOk(names.has(addedAfter) || names.has(addedBefore), 'the new routes are new')
  speaker.originate(parsePrefix(addedBefore))
  speaker.originate(parsePrefix(addedAfter))
  let cursor = first.nextCursor
  t.ok(cursor, 'more pages')
  while (cursor !== null) {
    const body = (await app.inject({ url: `/v1/routes?limit=${limit}&prefix=198.18.0.0/16&cursor=${cursor}` })).json<PageBody>()
    served.push(...body.routes.map((r) => r.prefix))
    cursor = body.nextCursor
  }
  t.equal(new Set(served).size, served.length, 'nothing served twice')
  const servedSet = new Set(served)
  const throughout = [...names].filter((p) => p.startsWith('198.18.') && !gone.includes(p))
  t.ok(throughout.every((p) => servedSet.has(p)), 'every route present throughout was served')
  t.ok(servedSet.has(addedAfter), 'a route added after the cursor shows up')
  t.notOk(servedSet.has(addedBefore), 'a route added before the cursor does not (it sorts before)')
  t.notOk(servedSet.has('198.18.100.1/32') || servedSet.has('198.18.200.3/32'), 'routes withdrawn ahead of the cursor are not served')
  t.ok(compareKeys(key(boundary), key(served[limit]!)) < 0, 'the second page starts after the first one ended')
})
