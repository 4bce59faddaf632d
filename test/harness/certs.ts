// Test harness: throwaway X.509 material made with the `openssl` CLI in a temp dir (a CA, leaf certificates
// it signs with the SANs asked for). It owns that directory and removes it in teardown; it never reads or
// writes the machine's own certificates.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NEW_P256_KEY, openssl as opensslIn } from '../../agent/demo/openssl.js'

export interface CertFiles {
  readonly cert: string
  readonly key: string
}

export interface CertAuthority extends CertFiles {
  /** Issues a leaf certificate (server and client use) for `name` with these SANs, e.g. ['IP:127.0.0.1']. */
  issue(name: string, sans?: readonly string[]): Promise<CertFiles>
}

export interface CertDir {
  readonly dir: string
  /** A new self-signed CA whose files live in this directory. */
  authority(name: string): Promise<CertAuthority>
  /** A bare key pair with no certificate (e.g. for signing service-account tokens): PEM private and public key. */
  keyPair(name: string): Promise<{ readonly key: string; readonly pub: string }>
  remove(): void
}

interface Teardown {
  teardown(fn: () => unknown): void
}

/** A new directory under `parent` (default the system temp dir), removed in t's teardown. */
export function certDir(t?: Teardown, parent: string = tmpdir()): CertDir {
  const dir = mkdtempSync(join(parent, 'pinto-certs-'))
  const remove = (): void => rmSync(dir, { recursive: true, force: true })
  const openssl = (args: readonly string[]): Promise<void> => opensslIn(args, dir)
  t?.teardown(remove)
  return {
    dir,
    remove,
    async keyPair(name: string) {
      const pair = { key: join(dir, `${name}.key`), pub: join(dir, `${name}.pub`) }
      await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', pair.key])
      await openssl(['pkey', '-in', pair.key, '-pubout', '-out', pair.pub])
      return pair
    },
    async authority(caName: string): Promise<CertAuthority> {
      const ca = { cert: join(dir, `${caName}.crt`), key: join(dir, `${caName}.key`) }
      await openssl(['req', '-x509', ...NEW_P256_KEY, '-keyout', ca.key, '-out', ca.cert, '-days', '2', '-subj', `/CN=${caName}`])
      return {
        ...ca,
        async issue(name: string, sans: readonly string[] = []): Promise<CertFiles> {
          const leaf = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) }
          const csr = join(dir, `${name}.csr`)
          const ext = join(dir, `${name}.ext`)
          const lines = ['basicConstraints=CA:FALSE', 'keyUsage=digitalSignature', 'extendedKeyUsage=serverAuth,clientAuth']
          if (sans.length > 0) lines.push(`subjectAltName=${sans.join(',')}`)
          writeFileSync(ext, `${lines.join('\n')}\n`)
          await openssl(['req', ...NEW_P256_KEY, '-keyout', leaf.key, '-out', csr, '-subj', `/CN=${name}`])
          await openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', leaf.cert, '-days', '2', '-extfile', ext])
          return leaf
        },
      }
    },
  }
}

/** The certificates a TLS etcd test needs: etcd's CA and what it signs, and a second CA for the wrong cases. */
export interface EtcdPki {
  readonly dir: string
  readonly ca: CertAuthority
  /** etcd's certificate, for `sans` (default IP:127.0.0.1). */
  readonly server: CertFiles
  /** Signed by ca: etcd accepts it. */
  readonly client: CertFiles
  /** A CA that signed neither etcd's certificate nor the client's. */
  readonly otherCa: CertAuthority
  /** Signed by otherCa: etcd refuses it. */
  readonly otherClient: CertFiles
  /** Signed by ca, for a name etcd is not reached by (IP:127.0.0.2, DNS:elsewhere.example). */
  readonly wrongName: CertFiles
}

export async function etcdPki(t?: Teardown, sans: readonly string[] = ['IP:127.0.0.1']): Promise<EtcdPki> {
  const dir = certDir(t)
  const ca = await dir.authority('etcd-ca')
  const otherCa = await dir.authority('other-ca')
  return {
    dir: dir.dir,
    ca,
    server: await ca.issue('etcd-server', sans),
    client: await ca.issue('pinto-client'),
    otherCa,
    otherClient: await otherCa.issue('other-client'),
    wrongName: await ca.issue('etcd-wrong-name', ['IP:127.0.0.2', 'DNS:elsewhere.example']),
  }
}
