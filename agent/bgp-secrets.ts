// BGP passwords from secretKeyRef, read where a Kubernetes Secret volume puts them: `<dir>/<name>/<key>`.
// It reads and checks the files and notices when one changes; it decides nothing about sessions. A
// problem is an error naming the resource's field, never a peering quietly left without its key.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { SecretKeyRef } from '../config/index.js'
import { TCP_MD5_MAX_KEY } from '../bgp/index.js'

/** A secretKeyRef and where it was written, e.g. `BGPPeer tor-1: spec.password.secretKeyRef`. */
export interface PasswordRef {
  readonly ref: SecretKeyRef
  readonly field: string
}

export type ResolvedPassword = { readonly password: string | undefined } | { readonly error: string }

/** A name or key as a Secret volume lays it out: one path element, never `.` or `..`. */
const SAFE = /^[-._a-zA-Z0-9]+$/

/** The file a reference names, or the error naming the field at fault. Pure. */
export function secretPath(dir: string, r: PasswordRef): { path: string } | { error: string } {
  const { name, key } = r.ref
  if (name === undefined || name === '') return { error: `${r.field}.name: required (the Secret's name)` }
  for (const [what, v] of [['name', name], ['key', key]] as const) {
    if (!SAFE.test(v) || v === '.' || v === '..') return { error: `${r.field}.${what}: ${JSON.stringify(v)} is not a Secret ${what} (letters, digits, '-', '_', '.')` }
  }
  return { path: join(dir, name, key) }
}

/** What the contents of a key file mean as a TCP-MD5 password. Pure. */
export function passwordFrom(r: PasswordRef, path: string, content: Buffer | undefined): ResolvedPassword {
  if (content === undefined) return r.ref.optional === true ? { password: undefined } : { error: `${r.field}: ${path} does not exist` }
  if (content.length === 0) return { error: `${r.field}: ${path} is empty (a TCP-MD5 key has 1 to ${TCP_MD5_MAX_KEY} bytes)` }
  if (content.length > TCP_MD5_MAX_KEY) return { error: `${r.field}: ${path} holds ${content.length} bytes; a TCP-MD5 key has at most ${TCP_MD5_MAX_KEY}` }
  return { password: content.toString('utf8') }
}

/** Reads the passwords the peers need and remembers what it read, to tell when a file changed. */
export class BgpSecrets {
  /** path -> content (undefined: absent) as last read. */
  private seen = new Map<string, string | undefined>()

  constructor(readonly dir: string) {}

  /** Starts a new round of resolve() calls; paths no longer asked for stop being watched. */
  begin(): void {
    this.seen = new Map()
  }

  async resolve(r: PasswordRef): Promise<ResolvedPassword> {
    const where = secretPath(this.dir, r)
    if ('error' in where) return where
    let content: Buffer | undefined
    try {
      content = await readFile(where.path)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return { error: `${r.field}: ${where.path} cannot be read: ${(err as Error).message}` }
    }
    this.seen.set(where.path, content?.toString('hex'))
    return passwordFrom(r, where.path, content)
  }

  /** Whether any file read in the last round has changed, appeared or gone since. */
  async changed(): Promise<boolean> {
    for (const [path, before] of this.seen) {
      const now = await readFile(path).then((b) => b.toString('hex'), () => undefined)
      if (now !== before) return true
    }
    return false
  }
}
