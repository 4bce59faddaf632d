#!/usr/bin/env node
// Builds the CNI plugins as one single executable application (dist/sea/pinto, with dist/sea/pinto-ipam a
// hard link to it) with the shipped Node.js's --build-sea, from dist/bundle/pinto-sea.cjs: it runs on a
// host with no Node.js. The build runs on a copy of that Node.js without its symbol table and debug
// sections, which the executable then lacks too. Run after scripts/bundle.js; skips the build when the
// executable is newer than its inputs.
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, linkSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureNode } from './node-lts.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const bundle = join(root, 'dist', 'bundle', 'pinto-sea.cjs')
const out = join(root, 'dist', 'sea')
const exe = join(out, 'pinto')
const config = join(out, 'sea-config.json')
const stripped = join(out, '.node-stripped')

/** The sea config: see docs/architecture.md, "The CNI fast path", for why each field is as it is. */
const SEA_CONFIG = {
  main: bundle,
  output: `${exe}.building`,
  disableExperimentalSEAWarning: true,
  // The bundle's compiled code is stored: no parse and compile at start. Its lazy modules are plain require()s.
  useCodeCache: true,
  useSnapshot: false,
  execArgv: [],
  // NODE_OPTIONS in a runtime's environment must not add flags (or --require a file) to the plugin.
  execArgvExtension: 'none',
}

function fresh(node) {
  if (!existsSync(exe) || !existsSync(join(out, 'pinto-ipam'))) return false
  const built = statSync(exe).mtimeMs
  return [bundle, node, fileURLToPath(import.meta.url)].every((f) => statSync(f).mtimeMs < built)
}

try {
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\` first`)
  const node = ensureNode()
  if (!fresh(node)) {
    mkdirSync(out, { recursive: true })
    writeFileSync(config, JSON.stringify(SEA_CONFIG, null, 2) + '\n')
    // --build-sea copies the binary it runs as. The release binary carries its symbol table and DWARF
    // (about a fifth of it): nothing a plugin uses at run time (native stack traces read .dynsym, kept).
    copyFileSync(node, stripped)
    try {
      try {
        execFileSync('strip', ['--strip-all', stripped], { stdio: ['ignore', 'ignore', 'inherit'] })
      } catch (err) {
        throw new Error(err.code === 'ENOENT' ? '`strip` is not on PATH: install binutils' : `strip --strip-all ${stripped}: ${err.message}`, { cause: err })
      }
      execFileSync(stripped, ['--build-sea', config], { stdio: ['ignore', 'ignore', 'inherit'], env: { PATH: process.env.PATH ?? '' } })
    } finally {
      rmSync(stripped, { force: true })
    }
    renameSync(SEA_CONFIG.output, exe)
    rmSync(join(out, 'pinto-ipam'), { force: true })
    linkSync(exe, join(out, 'pinto-ipam'))
  }
  process.stdout.write(`${exe}: ${statSync(exe).size} bytes (pinto-ipam a hard link)\n`)
} catch (err) {
  process.stderr.write(`sea: ${err.message}\n`)
  process.exit(1)
}
