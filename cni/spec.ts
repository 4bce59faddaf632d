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
}

/** Which variables each verb needs (CNI spec §"Parameters"); the rest may be absent. */
const NEEDS: Readonly<Record<Command, readonly string[]>> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
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
  // IFNAMSIZ is 16 including the NUL; the kernel also refuses '/', whitespace, '.' and '..'.
  if (ifname !== '' && (ifname.length > 15 || /[/\s:]/.test(ifname) || ifname === '.' || ifname === '..')) {
    throw new CniError(ERR.invalidEnv, `CNI_IFNAME: ${JSON.stringify(ifname)} is not a valid interface name (1-15 characters, no '/', ':' or spaces)`)
  }
  return {
    command: cmd,
    containerId: env['CNI_CONTAINERID'] ?? '',
    netns: env['CNI_NETNS'] ?? '',
    ifname,
    args: parseCniArgs(env['CNI_ARGS'] ?? ''),
    path: (env['CNI_PATH'] ?? '').split(':').filter((p) => p !== ''),
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
