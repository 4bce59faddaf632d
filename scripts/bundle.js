#!/usr/bin/env node
// Bundles the per-pod programs (the CNI plugins) into one CommonJS file each, so each exec reads and
// compiles one script instead of resolving a module graph. Run after tsc; fails if a heavy package slipped in.
// Also builds the status page pinto-node serves (agent/ui/browser → dist/bundle/ui/app.js, app.css).
import { build } from 'esbuild'
import { chmodSync, mkdirSync, renameSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(root, 'dist', 'bundle')
mkdirSync(out, { recursive: true })

const FORBIDDEN = ['pino', 'fastify', 'etcd3', 'yaml', 'execa', 'prom-client', 'ip-num']

// pinto-sea is the entry of the single executable (scripts/sea.js) that serves both plugins by name.
for (const [name, entry] of [['pinto', 'cni/pinto-main.ts'], ['pinto-ipam', 'cni/pinto-ipam-main.ts'], ['pinto-sea', 'cni/sea-main.ts']]) {
  const outfile = join(out, `${name}.cjs`)
  const result = await build({
    entryPoints: [join(root, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
    // Installed as /opt/cni/bin/NAME and exec'd directly by the runtime.
    banner: { js: '#!/usr/bin/env node' },
    // `await import('node:net')` (loaded on first use) becomes a lazy require: a dynamic import in a
    // CommonJS program starts Node's ESM loader, which a cold process would pay for nothing.
    supported: { 'dynamic-import': false },
  })
  const inputs = Object.keys(result.metafile.inputs)
  const heavy = inputs.filter((f) => FORBIDDEN.some((p) => f.includes(`node_modules/${p}/`)))
  if (heavy.length > 0) throw new Error(`${name}: the bundle must not contain ${heavy.join(', ')}`)
  chmodSync(outfile, 0o755)
  process.stdout.write(`${outfile}: ${statSync(outfile).size} bytes from ${inputs.length} modules\n`)
}

// The status page: one ES module and one stylesheet for the browser; nothing from node_modules, so the
// page needs no network beyond the agent.
{
  const ui = join(out, 'ui')
  mkdirSync(ui, { recursive: true })
  const result = await build({
    entryPoints: { app: join(root, 'agent/ui/browser/app.ts'), 'app-style': join(root, 'agent/ui/browser/app.css') },
    outdir: ui,
    entryNames: '[name]',
    bundle: true,
    platform: 'browser',
    target: ['chrome110', 'firefox110', 'safari16'],
    format: 'esm',
    minify: true,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  })
  const inputs = Object.keys(result.metafile.inputs)
  const foreign = inputs.filter((f) => f.includes('node_modules/'))
  if (foreign.length > 0) throw new Error(`status page: the bundle must not contain ${foreign.join(', ')}`)
  renameSync(join(ui, 'app-style.css'), join(ui, 'app.css'))
  for (const f of ['app.js', 'app.css']) process.stdout.write(`${join(ui, f)}: ${statSync(join(ui, f)).size} bytes\n`)
}
