// The openssl CLI for the demo's throwaway X.509 material (etcd's TLS, the Kubernetes demo cluster's CA):
// one call, its stderr in the error when it fails.

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execa } from 'execa'

/** `openssl req` options for a new P-256 key, unencrypted: quick to make, and accepted by Go and Node's TLS alike. */
export const NEW_P256_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'] as const

export async function openssl(args: readonly string[], cwd: string): Promise<void> {
  const r = await execa('openssl', args, { cwd, reject: false, timeout: 20_000 })
  if (r.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${String(r.stderr).trim() || (r.timedOut ? 'timed out after 20 s' : `exit ${r.exitCode}`)}`)
}

/** A P-256 key and a certificate for `cn` signed by ca.crt/ca.key in `dir`, with the extensions in `ext`. */
export async function issue(dir: string, name: string, cn: string, ext: string, days = '30'): Promise<void> {
  await writeFile(join(dir, `${name}.ext`), ext)
  await openssl(['req', ...NEW_P256_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`], dir)
  await openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-extfile', `${name}.ext`, '-days', days], dir)
}

/** A self-signed P-256 CA, ca.crt and ca.key in `dir`. */
export function authority(dir: string, cn: string, days = '30'): Promise<void> {
  return openssl(['req', '-x509', ...NEW_P256_KEY, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', `/CN=${cn}`, '-days', days], dir)
}
