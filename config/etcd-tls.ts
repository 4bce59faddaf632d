// The etcd client's TLS material, as Calico's ETCD_CA_CERT_FILE / ETCD_CERT_FILE / ETCD_KEY_FILE: which files are
// named (checked against the datastore's scheme, purely), and reading them once at open into the buffers the etcd3
// client takes. Every failure is one line naming the variable; it never connects anywhere.

import { readFileSync } from 'node:fs'
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto'
import { rootCertificates } from 'node:tls'
import { DatastoreError } from './datastore.js'

export const ETCD_CA_CERT_FILE = 'PINTO_ETCD_CA_CERT_FILE'
export const ETCD_CERT_FILE = 'PINTO_ETCD_CERT_FILE'
export const ETCD_KEY_FILE = 'PINTO_ETCD_KEY_FILE'

export interface EtcdTlsFiles {
  /** PEM CA bundle the server's certificate must chain to; unset: Node's bundled roots. */
  readonly ca?: string
  /** PEM client certificate (chain) and its key; both or neither. */
  readonly cert?: string
  readonly key?: string
}

/** What the etcd3 client's `credentials` takes, with the files they came from (for errors naming the setting). */
export interface EtcdCredentials {
  readonly rootCertificate: Buffer
  readonly certChain?: Buffer
  readonly privateKey?: Buffer
  readonly files: EtcdTlsFiles
}

/** A bad datastore setting: `variable` is the environment variable to name, `message` starts with it. */
export class DatastoreSettingError extends DatastoreError {
  constructor(
    readonly variable: string,
    readonly detail: string,
  ) {
    super('invalid', `${variable}: ${detail}`)
    this.name = 'DatastoreSettingError'
  }
}

type Env = Readonly<Record<string, string | undefined>>

export function etcdTlsFilesFromEnv(env: Env): EtcdTlsFiles {
  const pick = (name: string): string | undefined => {
    const v = env[name]
    if (v === undefined || v === '') return undefined
    if (v.trim() !== v) throw new DatastoreSettingError(name, `${JSON.stringify(v)} has surrounding spaces`)
    return v
  }
  const ca = pick(ETCD_CA_CERT_FILE)
  const cert = pick(ETCD_CERT_FILE)
  const key = pick(ETCD_KEY_FILE)
  return { ...(ca !== undefined ? { ca } : {}), ...(cert !== undefined ? { cert } : {}), ...(key !== undefined ? { key } : {}) }
}

/** The pure checks: a client certificate needs its key (and the reverse), and TLS files need an https:// datastore. */
export function checkEtcdTlsFiles(spec: { readonly kind: string; readonly tls?: boolean }, files: EtcdTlsFiles): void {
  if (files.cert !== undefined && files.key === undefined) throw new DatastoreSettingError(ETCD_KEY_FILE, `is not set but ${ETCD_CERT_FILE} is; a client certificate needs its key`)
  if (files.key !== undefined && files.cert === undefined) throw new DatastoreSettingError(ETCD_CERT_FILE, `is not set but ${ETCD_KEY_FILE} is; a client key needs its certificate`)
  if (spec.kind === 'etcd' && spec.tls === true) return
  const set = [ETCD_CA_CERT_FILE, ETCD_CERT_FILE, ETCD_KEY_FILE].find((_, i) => [files.ca, files.cert, files.key][i] !== undefined)
  if (set !== undefined) {
    const what = spec.kind === 'etcd' ? 'a plain (etcd:// or http://) etcd datastore' : spec.kind === 'kubernetes' ? 'the kubernetes datastore' : 'the embedded datastore'
    throw new DatastoreSettingError(set, `is set but PINTO_DATASTORE names ${what}; TLS needs https://host:port[,https://host:port]`)
  }
}

const oneLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, '; ')

function read(variable: string, path: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    throw new DatastoreSettingError(variable, `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? oneLine(err)}`)
  }
}

function certificate(variable: string, path: string, pem: Buffer, now: Date): X509Certificate {
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new DatastoreSettingError(variable, `${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`)
  let cert: X509Certificate
  try {
    cert = new X509Certificate(pem)
  } catch (err) {
    throw new DatastoreSettingError(variable, `${path} is not a valid PEM certificate: ${oneLine(err)}`)
  }
  if (new Date(cert.validTo) < now) throw new DatastoreSettingError(variable, `${path}: certificate ${cert.subject.replace(/\n/g, ', ')} expired on ${cert.validTo}`)
  if (new Date(cert.validFrom) > now) throw new DatastoreSettingError(variable, `${path}: certificate ${cert.subject.replace(/\n/g, ', ')} is not valid before ${cert.validFrom}`)
  return cert
}

function privateKey(path: string, pem: Buffer): KeyObject {
  try {
    return createPrivateKey(pem)
  } catch (err) {
    throw new DatastoreSettingError(ETCD_KEY_FILE, `${path} is not a usable unencrypted PEM private key: ${oneLine(err)}`)
  }
}

/** Reads and checks the files (each once); the buffers go to the etcd3 client unchanged. */
export function readEtcdCredentials(files: EtcdTlsFiles, now = new Date()): EtcdCredentials {
  let rootCertificate: Buffer
  if (files.ca !== undefined) {
    rootCertificate = read(ETCD_CA_CERT_FILE, files.ca)
    certificate(ETCD_CA_CERT_FILE, files.ca, rootCertificate, now)
  } else {
    rootCertificate = Buffer.from(rootCertificates.join('\n'))
  }
  if (files.cert === undefined || files.key === undefined) return { rootCertificate, files }
  const certChain = read(ETCD_CERT_FILE, files.cert)
  const leaf = certificate(ETCD_CERT_FILE, files.cert, certChain, now)
  const keyPem = read(ETCD_KEY_FILE, files.key)
  if (!leaf.checkPrivateKey(privateKey(files.key, keyPem))) {
    throw new DatastoreSettingError(ETCD_KEY_FILE, `${files.key} is not the key of the certificate in ${ETCD_CERT_FILE} (${files.cert})`)
  }
  return { rootCertificate, certChain, privateKey: keyPem, files }
}
