// The status page's server side and the session events it shows, through app.inject() over a live
// speaker pair: / and /ui/* with types, caching and CSP, hidden from OpenAPI; /v1/events as sessions move.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { buildApi } from '../../../agent/api/index.js'
import type { Transition } from '../../../bgp/session/transition-log.js'
import { waitFor } from '../../harness/wait.js'
import { fixture } from './fixture.js'

type EventRow = Omit<Transition, 'at'> & { at: string }

t.test('GET /v1/events: the session coming up, then going down with its reason', async (t) => {
  const f = await fixture(t)
  const app = await buildApi(f.deps)
  t.teardown(() => app.close())
  const events = async (q = ''): Promise<EventRow[]> => {
    const r = await app.inject(`/v1/events${q}`)
    t.equal(r.statusCode, 200, r.body)
    return r.json<{ events: EventRow[] }>().events
  }
  const up = await events()
  t.equal(up[0]?.to, 'Established', 'the newest is the session reaching Established')
  t.equal(up[0]?.peer, 'node-b')
  t.ok(up.some((e) => e.from === 'Idle' && e.event === 'ManualStart'), 'the start is there too')
  t.ok(up.every((e, i) => i === 0 || e.seq < up[i - 1]!.seq), 'newest first')
  t.ok(!Number.isNaN(Date.parse(up[0]!.at)), 'at is a date-time')
  const top = up[0]!.seq

  f.b.removePeer('node-a')
  const down = await waitFor(async () => (await events(`?after=${top}`)).find((e) => e.from === 'Established'), { timeoutMs: 10_000, what: 'a transition out of Established' })
  t.match(down.reason, /notification|cease|deconfigured/i, `the reason says why: ${down.reason}`)
  t.ok((await events(`?after=${top}`)).every((e) => e.seq > top), 'after filters')
  t.equal((await events('?limit=1')).length, 1)
  t.same(await events('?peer=nobody'), [])

  const bad = await app.inject('/v1/events?limit=0')
  t.equal(bad.statusCode, 400)
  t.match(bad.body, /limit/)
  const unknown = await app.inject('/v1/events?since=1')
  t.equal(unknown.statusCode, 400)
  t.match(unknown.body, /since/)
})

t.test('the status page: HTML shell and built assets with types, revalidation and a strict CSP', async (t) => {
  const f = await fixture(t)
  const app = await buildApi(f.deps)
  t.teardown(() => app.close())
  const page = await app.inject('/')
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html; charset=utf-8/)
  t.match(page.body, /<script type="module" src="\/ui\/app\.js"><\/script>/)
  t.match(page.headers['content-security-policy'], /default-src 'none'; script-src 'self'/)
  t.equal(page.headers['cache-control'], 'no-cache')
  for (const [path, type] of [['/ui/app.js', /^text\/javascript/], ['/ui/app.css', /^text\/css/]] as const) {
    const r = await app.inject(path)
    t.equal(r.statusCode, 200, `${path} is built (npm run build) and served`)
    t.match(r.headers['content-type'], type, path)
    t.equal(r.headers['x-content-type-options'], 'nosniff')
    t.ok(r.body.length > 1000, `${path} has content`)
    const again = await app.inject({ url: path, headers: { 'if-none-match': String(r.headers.etag) } })
    t.equal(again.statusCode, 304, `${path} revalidates by ETag`)
    t.equal(again.body, '')
  }
  const js = (await app.inject('/ui/app.js')).body
  t.notMatch(js, /https?:\/\/(?!www\.w3\.org\/2000\/svg)/, 'the page names no other host')
  const doc = (await app.inject('/docs/json')).json<{ paths: Record<string, unknown> }>()
  t.notOk('/' in doc.paths || '/ui/app.js' in doc.paths, 'the page is hidden from the OpenAPI document')
  t.ok('/v1/events' in doc.paths, '/v1/events is documented')
  const post = await app.inject({ method: 'POST', url: '/' })
  t.equal(post.statusCode, 405)
})

t.test('an unbuilt status page answers 404 saying how to build it', async (t) => {
  const f = await fixture(t)
  const empty = mkdtempSync(join(tmpdir(), 'pinto-ui-'))
  t.teardown(() => rmSync(empty, { recursive: true, force: true }))
  const app = await buildApi(f.deps, { uiDir: empty })
  t.teardown(() => app.close())
  const r = await app.inject('/ui/app.js')
  t.equal(r.statusCode, 404)
  t.match(r.json(), { error: { code: 'not-found', message: /npm run build/ } })
  t.equal((await app.inject('/')).statusCode, 200, 'the shell itself is always there')
})
