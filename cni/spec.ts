// The CNI spec's vocabulary: versions, well-known error codes, the plugin's environment, and version checks.
// Pure: parses the env and config values handed in; reads no process state, files or sockets itself.

export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number]
export const LATEST: CniVersion = '1.1.0'

/** CNI spec §"Error" well-known codes (1-99 are reserved to the spec). */
export const ERR = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  unknownContainer: 3,
  invalidEnv: 4,
  io: 5,
  decode: 6,
  invalidConfig: 7,
  tryAgainLater: 11,
  notAvailable: 50,
  limitedConnectivity: 51,
} as const

export class CniError extends Error {
  constructor(readonly code: number, message: string, readonly details = '') {
    super(message)
    this.name = 'CniError'
  }
}

export type Command = 'ADD' | 'DEL' | 'CHECK' | 'STATUS' | 'GC' | 'VERSION'
const COMMANDS: readonly Command[] = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC', 'VERSION']

export interface CniEnv {
  readonly command: Command
  readonly containerId: string
  readonly netns: string
  readonly ifname: string
  readonly args: Readonly<Record<string, string>>
  readonly path: readonly string[]
  /**
   * Set on a DEL whose container ID or interface name ADD would have refused: why nothing of pinto's can be
   * this attachment. Such a DEL succeeds at once and touches nothing (DEL is idempotent).
   */
  readonly notOurs?: string
}

/** libcni's rule for container IDs. */
const CONTAINER_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/
/**
 * Runtimes make 64 (hex digits); the ID goes into the IPAM handle `<network>.<ID>` (at most 253 characters)
 * and the host veth's ifalias (255 bytes), so 128 leaves the network's name 124.
 */
export const CONTAINER_ID_MAX = 128
/** IFNAMSIZ is 16 bytes including the NUL. */
const IFNAME_MAX = 15

/** What is wrong with a CNI_CONTAINERID, or undefined when it is valid. */
export function containerIdProblem(id: string): string | undefined {
  const shown = JSON.stringify(id.length > 40 ? `${id.slice(0, 40)}...` : id)
  if (id.length > CONTAINER_ID_MAX) return `CNI_CONTAINERID: ${shown} has ${id.length} characters, more than ${CONTAINER_ID_MAX}`
  if (CONTAINER_ID.test(id)) return undefined
  const at = /^[^A-Za-z0-9]/.test(id) ? 0 : id.search(/[^A-Za-z0-9_.-]/)
  return `CNI_CONTAINERID: ${shown} has ${JSON.stringify(id[at])} at byte ${at}; a container ID is letters, digits, '_', '.' and '-', starting with a letter or digit`
}

/** What is wrong with a CNI_IFNAME for a pod's interface, or undefined when it is valid. */
export function ifnameProblem(name: string): string | undefined {
  const why =
    name === 'lo' ? 'is the pod\'s loopback, never pinto\'s interface'
    : Buffer.byteLength(name) > IFNAME_MAX ? `is ${Buffer.byteLength(name)} bytes, more than ${IFNAME_MAX}`
    : /[/\s:]/.test(name) ? 'holds \'/\', \':\' or whitespace'
    : name === '.' || name === '..' ? 'is not a name the kernel allows'
    : undefined
  return why === undefined ? undefined : `CNI_IFNAME: ${JSON.stringify(name)} ${why}`
}

/**
 * Which variables each verb needs (CNI spec §"Parameters"), CNI_PATH where the reference plugins' skeleton
 * (containernetworking/cni pkg/skel) requires it; the rest may be absent.
 */
const NEEDS: Readonly<Record<Command, readonly string[]>> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_PATH'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  STATUS: [],
  GC: [],
  VERSION: [],
}

/** CNI_ARGS is `K=V;K2=V2`; a pair without '=' is an invalid-env error naming it. */
export function parseCniArgs(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  if (text === '') return out
  for (const [i, pair] of text.split(';').entries()) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    if (eq <= 0) throw new CniError(ERR.invalidEnv, `CNI_ARGS: pair ${i + 1} (${JSON.stringify(pair)}) is not KEY=VALUE`)
    out[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return out
}

export function parseEnv(env: Readonly<Record<string, string | undefined>>): CniEnv {
  const command = env['CNI_COMMAND']
  if (command === undefined || command === '') throw new CniError(ERR.invalidEnv, 'CNI_COMMAND is not set')
  if (!(COMMANDS as readonly string[]).includes(command)) {
    throw new CniError(ERR.invalidEnv, `CNI_COMMAND: ${JSON.stringify(command)} is not one of ${COMMANDS.join(', ')}`)
  }
  const cmd = command as Command
  for (const name of NEEDS[cmd]) {
    if ((env[name] ?? '') === '') throw new CniError(ERR.invalidEnv, `${name} is not set (needed for ${cmd})`)
  }
  const ifname = env['CNI_IFNAME'] ?? ''
  const containerId = env['CNI_CONTAINERID'] ?? ''
  const identifies = cmd === 'ADD' || cmd === 'DEL' || cmd === 'CHECK'
  const problem = identifies ? (containerIdProblem(containerId) ?? ifnameProblem(ifname)) : undefined
  // DEL of an attachment ADD refuses: nothing of ours can have it, so there is nothing to undo.
  if (problem !== undefined && cmd !== 'DEL') throw new CniError(ERR.invalidEnv, problem)
  return {
    command: cmd,
    containerId,
    netns: env['CNI_NETNS'] ?? '',
    ifname,
    args: parseCniArgs(env['CNI_ARGS'] ?? ''),
    path: (env['CNI_PATH'] ?? '').split(':').filter((p) => p !== ''),
    ...(problem !== undefined ? { notOurs: problem } : {}),
  }
}

/** -1, 0, 1 for semantic versions of the form a.b.c. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return Math.sign(d)
  }
  return 0
}

export function checkVersion(version: unknown, field = 'cniVersion'): CniVersion {
  if (version === undefined) throw new CniError(ERR.invalidConfig, `${field} is missing`)
  if (typeof version !== 'string') throw new CniError(ERR.invalidConfig, `${field}: expected a string, got ${JSON.stringify(version)}`)
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(version)) {
    throw new CniError(ERR.incompatibleVersion, 'incompatible CNI versions', `config is ${JSON.stringify(version)}, plugin supports [${SUPPORTED_VERSIONS.join(' ')}]`)
  }
  return version as CniVersion
}

/** CHECK exists from 0.4.0, STATUS and GC from 1.1.0; older configs get the incompatible-version error. */
export function checkVerbAllowed(command: Command, version: CniVersion): void {
  const since = command === 'CHECK' ? '0.4.0' : command === 'GC' || command === 'STATUS' ? '1.1.0' : undefined
  if (since !== undefined && compareVersions(version, since) < 0) {
    throw new CniError(ERR.incompatibleVersion, `config version ${version} does not allow ${command}`, `${command} needs cniVersion ${since} or later`)
  }
}

export function versionResult(requested: unknown): { cniVersion: string; supportedVersions: readonly string[] } {
  const v = typeof requested === 'string' && requested !== '' ? requested : LATEST
  return { cniVersion: v, supportedVersions: SUPPORTED_VERSIONS }
}

export function errorJson(version: string, err: CniError): string {
  return JSON.stringify({ cniVersion: version, code: err.code, msg: err.message, details: err.details })
}
