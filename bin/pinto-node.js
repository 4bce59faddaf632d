#!/usr/bin/env -S node --max-semi-space-size=2 --heap-growing-percent=30
// pinto-node: the node agent (BGP speaker, dataplane, IPAM service, REST API). Compiled to dist/ by `npm run build`.
import { existsSync } from 'node:fs'
const entry = new URL('../dist/agent/pinto-node-main.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write('pinto-node: not built yet; run `npm run build` in the pinto checkout first\n')
  process.exit(1)
}
const { main } = await import(entry.href)
process.exitCode = await main(process.env, process.argv.slice(2))
