#!/usr/bin/env node
// pintoctl: the operator CLI. The TypeScript sources compile to dist/ (npm run build).
import { existsSync } from 'node:fs'
const entry = new URL('../dist/agent/pintoctl/main.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write('pintoctl: not built yet; run `npm run build` in the pinto checkout first\n')
  process.exit(1)
}
const { main } = await import(entry.href)
process.exitCode = await main(process.argv.slice(2))
