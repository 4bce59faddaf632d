// Test harness: a real kube-apiserver over a private etcd, on loopback with free ports and one temp dir of its own
// (certificates, service-account keys, token file, kubeconfig, etcd's data). It owns starting both, waiting for
// /readyz, freezing or killing the apiserver for fault tests, and stopping both (by pid) and removing the dir;
// it never touches another apiserver or etcd. The binaries come from scripts/kubernetes.js (kubernetes-bin.ts).

import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execa } from 'execa'
import { certDir, type CertAuthority } from './certs.js'
import { freePort, startEtcd, type EtcdInstance } from './etcd.js'
import { kubernetesBin } from './kubernetes-bin.js'
import { isAlive } from './pid.js'
import { waitFor } from './wait.js'
import { stopProcess } from './stop-process.js'

export interface KubeApiserverOptions {
  /** The Service ClusterIP range; its first address becomes the `kubernetes` Service's (and a SAN of the cert). */
  readonly serviceCidr?: string
  /** More kube-apiserver flags, after the harness's own (a later flag of the same name wins). */
  readonly extraArgs?: readonly string[]
  /** How long to wait for /readyz on start and restart; default 120 s (a cold start on a busy 2-core machine). */
  readonly readyTimeoutMs?: number
  /** etcd with its own default limits rather than the tests' small ones (see EtcdStartOptions.defaults), for benches. */
  readonly etcdDefaults?: boolean
}

export interface KubeApiserver {
  /** https://127.0.0.1:<port> */
  readonly url: string
  /** A kubeconfig for the admin (system:masters) by bearer token, context `pinto-test`. */
  readonly kubeconfig: string
  /** The admin's bearer token. */
  readonly token: string
  /** The CA that signed the serving certificate, and whose client certificates the apiserver accepts. */
  readonly ca: CertAuthority
  /** The directory holding everything this instance made; removed by stop(). */
  readonly dir: string
  /** The binaries' directory (kubectl, kube-apiserver, etcd, and whatever else was built there). */
  readonly binDir: string
  readonly etcd: EtcdInstance
  readonly pid: number
  /** Runs kubectl against this apiserver; resolves to its stdout, rejects with its stderr on a non-zero exit. */
  kubectl(...args: string[]): Promise<string>
  /** The same, with `input` on its stdin (e.g. `apply -f -`). */
  kubectlWithInput(input: string, ...args: string[]): Promise<string>
  /** SIGSTOP / SIGCONT: the apiserver stops answering (connections hang) and resumes. */
  freeze(): void
  thaw(): void
  /** kill -9, etcd and the dir kept; restart() starts it again with the same flags and port and waits for /readyz. */
  crash(): Promise<void>
  restart(): Promise<void>
  stop(): Promise<void>
}

interface Teardown {
  teardown(fn: () => unknown): void
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()))
}

/** The first usable address of an IPv4 CIDR, e.g. 198.51.100.1 for 198.51.100.0/24. */
function firstAddress(cidr: string): string {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr)
  if (m === null) throw new Error(`serviceCidr ${JSON.stringify(cidr)}: expected an IPv4 a.b.c.d/len`)
  const n = ((Number(m[1]) << 24) | (Number(m[2]) << 16) | (Number(m[3]) << 8) | Number(m[4])) >>> 0
  const first = (n + 1) >>> 0
  return [first >>> 24, (first >>> 16) & 255, (first >>> 8) & 255, first & 255].join('.')
}

/** GET /readyz with the admin token: true on 200. */
function ready(url: string, ca: Buffer, token: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`${url}/readyz`, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 2000 }, (res) => {
      res.resume()
      resolve(res.statusCode === 200)
    })
    req.on('timeout', () => req.destroy())
    req.on('error', () => resolve(false))
    req.end()
  })
}

/** What startKubeApiserver runs; a test file builds them first with `kubernetesBin(KUBE_APISERVER_BINARIES, tap)`. */
export const KUBE_APISERVER_BINARIES = ['etcd', 'kube-apiserver', 'kubectl'] as const

/**
 * Starts etcd and kube-apiserver and waits until /readyz answers 200; stopped in t's teardown. Builds the binaries
 * if they are not there, but without lifting the file's timeout: call kubernetesBin with the root tap object first.
 */
export async function startKubeApiserver(t: Teardown, options: KubeApiserverOptions = {}): Promise<KubeApiserver> {
  const binDir = await kubernetesBin(KUBE_APISERVER_BINARIES)
  const dir = mkdtempSync(join(tmpdir(), 'pinto-kube-apiserver-'))
  let child: ChildProcess | undefined
  let etcd: EtcdInstance | undefined
  // If the test process dies without its teardown, leave no apiserver (etcd's own harness does the same for it).
  const onExit = (): void => {
    if (child?.pid !== undefined && child.exitCode === null) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  process.once('exit', onExit)
  const stop = async (): Promise<void> => {
    process.removeListener('exit', onExit)
    if (child !== undefined) await stopChild(child)
    await etcd?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  t.teardown(stop)

  etcd = await startEtcd(undefined, { bin: join(binDir, 'etcd'), parentDir: dir, ...(options.etcdDefaults === true ? { defaults: true } : {}) })
  const serviceCidr = options.serviceCidr ?? '198.51.100.0/24'
  const certs = certDir(undefined, dir)
  const ca = await certs.authority('kube-ca')
  const serving = await ca.issue('kube-apiserver', [
    'IP:127.0.0.1', `IP:${firstAddress(serviceCidr)}`, 'DNS:localhost',
    'DNS:kubernetes', 'DNS:kubernetes.default', 'DNS:kubernetes.default.svc', 'DNS:kubernetes.default.svc.cluster.local',
  ])
  const serviceAccount = await certs.keyPair('service-account')
  const token = randomBytes(24).toString('hex')
  const tokenFile = join(dir, 'tokens.csv')
  // token,user,uid,"groups"
  writeFileSync(tokenFile, `${token},pinto-test-admin,pinto-test-admin,"system:masters"\n`, { mode: 0o600 })

  const port = await freePort()
  const url = `https://127.0.0.1:${port}`
  const kubeconfig = join(dir, 'kubeconfig')
  writeFileSync(kubeconfig, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'pinto-test',
    clusters: [{ name: 'pinto-test', cluster: { server: url, 'certificate-authority': ca.cert } }],
    users: [{ name: 'pinto-test-admin', user: { token } }],
    contexts: [{ name: 'pinto-test', context: { cluster: 'pinto-test', user: 'pinto-test-admin' } }],
  }, null, 2), { mode: 0o600 })

  const args = [
    `--etcd-servers=${etcd.url}`,
    '--bind-address=127.0.0.1', `--secure-port=${port}`,
    // Loopback cannot be an Endpoints address, so the `kubernetes` Service gets no endpoints from this apiserver.
    '--advertise-address=127.0.0.1', '--endpoint-reconciler-type=none',
    `--tls-cert-file=${serving.cert}`, `--tls-private-key-file=${serving.key}`, `--client-ca-file=${ca.cert}`,
    `--token-auth-file=${tokenFile}`,
    '--authorization-mode=Node,RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${serviceAccount.pub}`, `--service-account-signing-key-file=${serviceAccount.key}`,
    `--service-cluster-ip-range=${serviceCidr}`,
    '--allow-privileged=true', '--profiling=false',
    `--cert-dir=${join(dir, 'serving')}`,
    ...(options.extraArgs ?? []),
  ]
  const bin = join(binDir, 'kube-apiserver')
  let stderr = ''
  const launch = (): ChildProcess => {
    const c = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    c.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-6000)
    })
    c.on('error', (err) => {
      stderr += `\nspawn ${bin}: ${err.message}`
    })
    return c
  }
  const caPem = readFileSync(ca.cert)
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000
  const waitReady = async (c: ChildProcess): Promise<void> => {
    await waitFor(async () => {
      if (c.exitCode !== null || c.signalCode !== null) throw new Error(`kube-apiserver exited (${c.signalCode ?? `code ${c.exitCode}`}): ${stderr.trim()}`)
      return ready(url, caPem, token)
    }, { timeoutMs: readyTimeoutMs, intervalMs: 200, what: `kube-apiserver ${url}/readyz` }).catch((err: Error) => {
      throw new Error(`${err.message}\nits stderr ends: ${stderr.slice(-3000).trim()}`)
    })
  }
  child = launch()
  await waitReady(child)

  // kubectl's discovery cache goes in the dir too, not in ~/.kube.
  const env = { ...process.env, KUBECONFIG: kubeconfig, KUBECACHEDIR: join(dir, 'kubectl-cache') }
  const kubectlRun = async (input: string | undefined, args: string[]): Promise<string> => {
    const r = await execa(join(binDir, 'kubectl'), args, { env, input, reject: false, timeout: 60_000 })
    if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.timedOut ? 'timed out' : `exit ${r.exitCode}`}): ${String(r.stderr).trim()}`)
    return String(r.stdout)
  }
  const current = (): ChildProcess => child as ChildProcess
  // Never signal pid -1 or 0 (everything this user may signal, or our own group).
  const signal = (sig: NodeJS.Signals): void => {
    const pid = current().pid
    if (pid === undefined || pid <= 0) throw new Error('kube-apiserver has no process to signal')
    if (sig === 'SIGSTOP') stopProcess(pid)
    else process.kill(pid, sig)
  }
  return {
    url, kubeconfig, token, ca, dir, binDir, etcd,
    get pid() {
      return current().pid ?? -1
    },
    kubectl: (...a) => kubectlRun(undefined, a),
    kubectlWithInput: (input, ...a) => kubectlRun(input, a),
    freeze: () => signal('SIGSTOP'),
    thaw: () => signal('SIGCONT'),
    async crash() {
      const c = current()
      if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
      await exited(c)
    },
    async restart() {
      child = launch()
      await waitReady(child)
    },
    stop,
  }
}

/** SIGCONT (a frozen process would not see SIGTERM), SIGTERM, and SIGKILL if it has not gone within 10 s. */
async function stopChild(child: ChildProcess): Promise<void> {
  const pid = child.pid
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  process.kill(pid, 'SIGCONT')
  process.kill(pid, 'SIGTERM')
  const killer = setTimeout(() => isAlive(pid) && child.kill('SIGKILL'), 10_000)
  await exited(child)
  clearTimeout(killer)
}
