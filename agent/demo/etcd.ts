// The demo cluster's etcd: one Debian etcd on a fabric host of its own (a namespace, never the machine's),
// optionally with TLS and client-certificate authentication from a CA made here with openssl, as a
// production etcd runs. It owns that process, its data dir and its certificates, and nothing else.

import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { execa } from 'execa'
import { isAlive, killQuietly } from './processes.js'
import { authority, issue } from './openssl.js'

export const ETCD_BIN = '/usr/bin/etcd'
export const ETCD_PORT = 2379

export interface EtcdTlsFiles {
  readonly ca: string
  readonly cert: string
  readonly key: string
}

export interface DemoEtcd {
  /** The value for PINTO_DATASTORE: `https://addr:port` with TLS, else `etcd://addr:port`. */
  readonly datastore: string
  /** Client credentials (PINTO_ETCD_CA_CERT_FILE, _CERT_FILE, _KEY_FILE), when TLS is on. */
  readonly tls: EtcdTlsFiles | undefined
  readonly pid: number
  /** The fabric host etcd runs in: a place that reaches it (the machine's own namespace does not). */
  readonly ns: string
  /** The keys and values under a prefix, read by etcdctl on etcd's host. */
  list(prefix: string): Promise<{ key: string; value: string }[]>
  /** SIGSTOP: etcd keeps its sockets open and answers nothing, as a hung etcd does. */
  freeze(): void
  thaw(): void
  stop(): Promise<void>
}

/** A CA, a server certificate for `address` (IP SAN) and a client certificate, under dir; paths returned. */
export async function makeEtcdCertificates(dir: string, address: string): Promise<{ server: EtcdTlsFiles; client: EtcdTlsFiles }> {
  await mkdir(dir, { recursive: true })
  await authority(dir, 'pinto demo etcd CA')
  await issue(dir, 'server', 'pinto-demo-server', `subjectAltName=IP:${address},IP:127.0.0.1\nextendedKeyUsage=serverAuth\n`)
  await issue(dir, 'client', 'pinto-demo-client', 'extendedKeyUsage=clientAuth\n')
  const files = (who: string): EtcdTlsFiles => ({ ca: join(dir, 'ca.crt'), cert: join(dir, `${who}.crt`), key: join(dir, `${who}.key`) })
  return { server: files('server'), client: files('client') }
}

/**
 * Starts etcd inside `ns` listening on `address`, and resolves once it answers a health check. Logs go to
 * dir/etcd.log; with `tls` every client must present a certificate of the CA made in dir/tls.
 */
export async function startEtcd(ns: string, address: string, dir: string, opts: { tls: boolean; timeoutMs?: number }): Promise<DemoEtcd> {
  const data = join(dir, 'data')
  await mkdir(data, { recursive: true })
  const certs = opts.tls ? await makeEtcdCertificates(join(dir, 'tls'), address) : undefined
  const scheme = certs ? 'https' : 'http'
  const client = `${scheme}://${address}:${ETCD_PORT}`
  const peer = `http://127.0.0.1:${ETCD_PORT + 1}`
  const args = [
    'netns', 'exec', ns, ETCD_BIN, '--name', 'demo', '--data-dir', data,
    '--listen-client-urls', client, '--advertise-client-urls', client,
    '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `demo=${peer}`,
    '--logger', 'zap', '--log-outputs', join(dir, 'etcd.log'),
    ...(certs ? ['--client-cert-auth', '--trusted-ca-file', certs.server.ca, '--cert-file', certs.server.cert, '--key-file', certs.server.key] : []),
  ]
  const child: ChildProcess = spawn('ip', args, { stdio: 'ignore' })
  const pid = child.pid
  if (pid === undefined) throw new Error('etcd did not start')
  const stop = async (): Promise<void> => {
    if (!isAlive(pid)) return
    killQuietly(pid, 'SIGCONT')
    killQuietly(pid, 'SIGTERM')
    const deadline = Date.now() + 5000
    while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    if (isAlive(pid)) killQuietly(pid, 'SIGKILL')
  }
  const etcdctl = ['netns', 'exec', ns, 'etcdctl', '--endpoints', client, '--dial-timeout', '1s', '--command-timeout', '3s',
    ...(certs ? ['--cacert', certs.client.ca, '--cert', certs.client.cert, '--key', certs.client.key] : [])]
  const health = [...etcdctl, 'endpoint', 'health']
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000)
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`etcd exited (${child.exitCode ?? child.signalCode}); see ${join(dir, 'etcd.log')}`)
    if ((await execa('ip', health, { reject: false })).exitCode === 0) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`etcd not healthy after ${opts.timeoutMs ?? 20_000} ms; see ${join(dir, 'etcd.log')}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    datastore: certs ? client : `etcd://${address}:${ETCD_PORT}`,
    tls: certs?.client,
    pid,
    ns,
    list: async (prefix) => {
      const r = await execa('ip', [...etcdctl, 'get', '--prefix', prefix, '-w', 'json'])
      const body = JSON.parse(String(r.stdout)) as { kvs?: { key: string; value: string }[] }
      const text = (b64: string): string => Buffer.from(b64, 'base64').toString('utf8')
      return (body.kvs ?? []).map((kv) => ({ key: text(kv.key), value: text(kv.value) }))
    },
    freeze: () => killQuietly(pid, 'SIGSTOP'),
    thaw: () => killQuietly(pid, 'SIGCONT'),
    stop,
  }
}
