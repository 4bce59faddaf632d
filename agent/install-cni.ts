// Installs the CNI plugins on a node, as Calico's install-cni does: `pinto` and `pinto-ipam` into the
// runtime's plugin directory and pinto's network config into its config directory. The plugins are the
// single executable (dist/sea/pinto, needing no Node.js on the host; `pinto-ipam` a hard link to it) when
// it is built, else each bundle with its first line naming a Node.js by absolute path: the runtime execs
// plugins with its own environment, whose PATH need not hold a Node.js, so `#!/usr/bin/env node` could fail.
// Files are written beside their target and renamed over it, so a plugin exec'd meanwhile runs the old
// file or the new one, never half of one. What to write is pure (shebang, conflist); installCni does the I/O.

import { accessSync, chmodSync, constants, copyFileSync, existsSync, linkSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The built bundles (dist/bundle) beside this module's directory (dist/agent). */
export const BUNDLE_DIR = fileURLToPath(new URL('../bundle/', import.meta.url))

/** The single executable serving both plugins (scripts/sea.js), beside the bundles. */
export const SEA_DIR = fileURLToPath(new URL('../sea/', import.meta.url))

export const PLUGINS = ['pinto', 'pinto-ipam'] as const

/** The single executable in `seaDir`, when it is built. */
export function seaExecutable(seaDir: string = SEA_DIR): string | undefined {
  const file = join(seaDir, 'pinto')
  return existsSync(file) ? file : undefined
}

/** Linux reads the first 256 bytes of a script for its `#!` line (BINPRM_BUF_SIZE): `#!`, the path, a newline. */
const MAX_INTERPRETER = 256 - 3

export interface InstallCniOptions {
  /** Where the runtime looks for plugins (default /opt/cni/bin). */
  readonly binDir: string
  /** Where the runtime reads network configs (default /etc/cni/net.d); undefined writes none. */
  readonly confDir: string | undefined
  /** Default 10-pinto.conflist. */
  readonly confName?: string
  /**
   * The Node.js the bundles run under, by absolute path as the node's root sees it; undefined installs
   * the single executable from seaDir (an error when it is not built).
   */
  readonly node?: string | undefined
  /** The agent's socket, when not the default /var/run/pinto/pinto.sock. */
  readonly socket?: string | undefined
  /** The pods' MTU; 0 (the default) reads what the agent wrote. */
  readonly mtu?: number
  /** Plugins chained after pinto; undefined chains portmap when binDir has it. */
  readonly chain?: readonly string[] | undefined
  readonly bundleDir?: string
  readonly seaDir?: string
}

export interface InstallReport {
  readonly written: readonly string[]
  /** Things the operator should know: a config that sorts before ours, say. */
  readonly notes: readonly string[]
}

/** The `#!` line for `node`; throws naming --node when the kernel could not exec it. */
export function shebangFor(node: string): string {
  if (!isAbsolute(node)) throw new Error(`--node: ${JSON.stringify(node)} is not an absolute path (the runtime execs the plugin with no PATH of ours)`)
  if (/\s/.test(node)) throw new Error(`--node: ${JSON.stringify(node)} contains whitespace, which a #! line cannot carry`)
  if (Buffer.byteLength(node) > MAX_INTERPRETER) throw new Error(`--node: the path is ${Buffer.byteLength(node)} bytes; a #! line holds at most ${MAX_INTERPRETER}`)
  return `#!${node}\n`
}

/** The bundle with its `#!` line replaced (or added). */
export function withShebang(bundle: string, node: string): string {
  const body = bundle.startsWith('#!') ? bundle.slice(bundle.indexOf('\n') + 1) : bundle
  return shebangFor(node) + body
}

/** Plugins a runtime would fail every ADD on, named in a chain: only names, no paths. */
function checkChain(chain: readonly string[]): void {
  for (const p of chain) if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(p)) throw new Error(`--chain: ${JSON.stringify(p)} is not a plugin name`)
}

/** pinto's network config list: pinto with pinto-ipam, then the chained plugins with their usual capabilities. */
export function pintoConflist(opts: { readonly socket?: string | undefined; readonly mtu: number; readonly chain: readonly string[] }): Record<string, unknown> {
  checkChain(opts.chain)
  const socket = opts.socket === undefined ? {} : { socket: opts.socket }
  const chained = opts.chain.map((type): Record<string, unknown> => {
    if (type === 'portmap') return { type, snat: true, capabilities: { portMappings: true } }
    if (type === 'bandwidth') return { type, capabilities: { bandwidth: true } }
    return { type }
  })
  return {
    name: 'k8s-pod-network',
    cniVersion: '1.0.0',
    plugins: [{ type: 'pinto', mtu: opts.mtu, ...socket, ipam: { type: 'pinto-ipam', ...socket } }, ...chained],
  }
}

/** Makes `path` whole beside itself with `write(tmp)` and renames it over `path`. */
function replaceWith(path: string, write: (tmp: string) => void): void {
  const tmp = `${path}.pinto-install-${process.pid}`
  try {
    rmSync(tmp, { force: true })
    write(tmp)
    renameSync(tmp, path)
  } catch (err) {
    rmSync(tmp, { force: true })
    throw new Error(`writing ${path}: ${(err as Error).message}`)
  }
}

function replaceFile(path: string, data: string, mode: number): void {
  replaceWith(path, (tmp) => writeFileSync(tmp, data, { mode }))
}

/** The plugins as the single executable: `pinto` copied, every other name a hard link to the new copy. */
function installSea(exe: string, binDir: string): string[] {
  const [main, ...names] = PLUGINS
  const first = join(binDir, main)
  const others = names.map((name) => join(binDir, name))
  replaceWith(first, (tmp) => {
    copyFileSync(exe, tmp)
    chmodSync(tmp, 0o755)
  })
  for (const path of others) replaceWith(path, (tmp) => linkSync(first, tmp))
  return [first, ...others]
}

function checkNode(node: string): void {
  shebangFor(node)
  try {
    accessSync(node, constants.X_OK)
  } catch {
    throw new Error(`--node: ${node} is not an executable file`)
  }
  if (!statSync(node).isFile()) throw new Error(`--node: ${node} is not a file`)
}

function checkDir(dir: string, flag: string): void {
  let st
  try {
    st = statSync(dir)
  } catch {
    throw new Error(`${flag}: ${dir} does not exist`)
  }
  if (!st.isDirectory()) throw new Error(`${flag}: ${dir} is not a directory`)
}

export function installCni(opts: InstallCniOptions): InstallReport {
  const bundleDir = opts.bundleDir ?? BUNDLE_DIR
  const confName = opts.confName ?? '10-pinto.conflist'
  const mtu = opts.mtu ?? 0
  const node = opts.node
  const sea = node === undefined ? seaExecutable(opts.seaDir) : undefined
  if (node !== undefined) checkNode(node)
  else if (sea === undefined) throw new Error(`${join(opts.seaDir ?? SEA_DIR, 'pinto')} is missing: run \`node scripts/sea.js\` in the pinto checkout, or name a Node.js with --node`)
  if (!Number.isInteger(mtu) || mtu < 0 || mtu > 65535) throw new Error(`--mtu: ${mtu} is not 0 or an MTU`)
  checkDir(opts.binDir, '--bin-dir')
  if (opts.confDir !== undefined) checkDir(opts.confDir, '--conf-dir')
  if (opts.confDir !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]*\.conflist$/.test(confName)) {
    throw new Error(`--conf-name: ${JSON.stringify(confName)} is not a file name ending in .conflist`)
  }
  const bundles = node === undefined ? [] : PLUGINS.map((name) => {
    const file = join(bundleDir, `${name}.cjs`)
    if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` in the pinto checkout first`)
    return { name, text: withShebang(readFileSync(file, 'utf8'), node) }
  })
  const chain = opts.chain ?? (existsSync(join(opts.binDir, 'portmap')) ? ['portmap'] : [])
  const conf = opts.confDir === undefined ? undefined : JSON.stringify(pintoConflist({ socket: opts.socket, mtu, chain }), null, 2) + '\n'

  const written: string[] = []
  const notes: string[] = []
  if (sea !== undefined) written.push(...installSea(sea, opts.binDir))
  for (const b of bundles) {
    const path = join(opts.binDir, b.name)
    replaceFile(path, b.text, 0o755)
    written.push(path)
  }
  if (opts.confDir !== undefined && conf !== undefined) {
    const path = join(opts.confDir, confName)
    replaceFile(path, conf, 0o644)
    written.push(path)
    for (const c of chain) if (!existsSync(join(opts.binDir, c))) notes.push(`${c} is chained but not in ${opts.binDir}: every ADD fails until it is installed`)
    // The runtime takes the first config file by name.
    const before = readdirSync(opts.confDir)
      .filter((f) => /\.(conf|conflist|json)$/.test(f) && f < confName)
      .sort()
    if (before.length > 0) notes.push(`${before.join(', ')} in ${opts.confDir} sorts before ${confName}: the runtime uses the first config file`)
  }
  return { written, notes }
}
