#!/usr/bin/env node
// pinto-ipam: the CNI IPAM plugin. Loads the single-file bundle built by `npm run build` (dist/bundle/pinto-ipam.cjs);
// a node installs that file itself as /opt/cni/bin/pinto-ipam (it carries its own shebang), not this wrapper.
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
const bundle = new URL('../dist/bundle/pinto-ipam.cjs', import.meta.url)
if (!existsSync(bundle)) {
  process.stdout.write(JSON.stringify({ cniVersion: '1.1.0', code: 5, msg: 'pinto-ipam: not built yet; run `npm run build` in the pinto checkout first', details: bundle.pathname }) + '\n')
  process.exit(1)
}
createRequire(import.meta.url)(bundle.pathname)
