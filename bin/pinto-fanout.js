#!/usr/bin/env node
// pinto-fanout: serves what every agent follows from one list and watch of the datastore (Typha's place).
import { existsSync } from 'node:fs'
const entry = new URL('../dist/agent/fanout/main.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write('pinto-fanout: not built yet; run `npm run build` in the pinto checkout first\n')
  process.exit(1)
}
const { main } = await import(entry.href)
process.exitCode = await main(process.env, process.argv.slice(2))
