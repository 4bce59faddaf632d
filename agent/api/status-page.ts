// The status page: GET / (the HTML shell) and /ui/app.js, /ui/app.css (built into dist/bundle/ui by
// scripts/bundle.js). Static, read-only files on the API's own listeners, hidden from the OpenAPI
// document; the page reads the REST API like any client and loads nothing from elsewhere (see the CSP).

import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'

/** dist/agent/api/ → dist/bundle/ui/ */
export const UI_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bundle', 'ui')

const INDEX = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pinto-node</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/app.css">
<script type="module" src="/ui/app.js"></script>
</head>
<body>
<noscript>This page needs JavaScript; the same data is at <a href="/v1/status">/v1/status</a>, <a href="/v1/peers">/v1/peers</a>, <a href="/v1/events">/v1/events</a>.</noscript>
<div id="app"></div>
</body>
</html>
`

/** Everything the page may load comes from this listener; nothing may frame it. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

interface Asset {
  readonly body: Buffer
  readonly type: string
  readonly etag: string
}

const asset = (body: Buffer, type: string): Asset => ({ body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` })

export const statusPagePlugin: FastifyPluginAsync<{ uiDir?: string }> = async (app, opts) => {
  const dir = opts.uiDir ?? UI_DIR
  const index = asset(Buffer.from(INDEX), 'text/html; charset=utf-8')
  // Read once on first use: the files change only with a new build, which restarts the agent.
  const cache = new Map<string, Promise<Asset>>()
  const load = (file: string, type: string): Promise<Asset> => {
    let p = cache.get(file)
    if (p === undefined) {
      p = readFile(join(dir, file)).then((b) => asset(b, type))
      // A missing bundle is retried on the next request (it may be built meanwhile).
      p.catch(() => cache.delete(file))
      cache.set(file, p)
    }
    return p
  }
  const send = (request: FastifyRequest, reply: FastifyReply, a: Asset): FastifyReply => {
    // Revalidated on every load (cheap: a 304), so a rebuilt agent's page is never served stale.
    void reply.header('cache-control', 'no-cache').header('etag', a.etag).header('x-content-type-options', 'nosniff').header('content-security-policy', CSP).header('referrer-policy', 'no-referrer')
    if (request.headers['if-none-match'] === a.etag) return reply.code(304).send()
    return reply.type(a.type).send(a.body)
  }
  const hidden = { schema: { hide: true } }
  app.get('/', hidden, async (request, reply) => send(request, reply, index))
  for (const [file, type] of [['app.js', 'text/javascript; charset=utf-8'], ['app.css', 'text/css; charset=utf-8']] as const) {
    app.get(`/ui/${file}`, hidden, async (request, reply) => {
      const a = await load(file, type).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') throw new ApiError('not-found', `the status page is not built (${join(dir, file)} is missing): run \`npm run build\``)
        throw err
      })
      return send(request, reply, a)
    })
  }
}
