// The Kubernetes demo cluster's control plane, in a namespace of its own on the fabric: etcd on its
// loopback, kube-apiserver on the fabric address, kube-controller-manager and kube-scheduler beside it, with a
// CA, serving certificate, service-account keys and an admin token made here. It owns those processes and
// their files under its directory, and nothing else.

import { spawn, type ChildProcess } from 'node:child_process'
import { openSync, closeSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { execa } from 'execa'
import { authority, issue, openssl } from '../openssl.js'
import { isAlive, killQuietly } from '../processes.js'

export const API_PORT = 6443

export interface ControlPlaneSpec {
  /** The namespace it runs in, and its address there. */
  readonly ns: string
  readonly address: string
  /** Where the binaries are (scripts/kubernetes.js). */
  readonly bin: string
  readonly dir: string
  /** The Services' range; its first address is the `kubernetes` Service's. */
  readonly serviceCidr: string
  readonly serviceIp: string
}

export interface ControlPlane {
  /** An admin kubeconfig for https://address:6443 (reachable from the fabric's namespaces). */
  readonly kubeconfig: string
  readonly token: string
  readonly caFile: string
  /** kubectl run in the control plane's namespace; resolves to stdout, rejects with stderr. */
  kubectl(args: readonly string[], input?: string): Promise<string>
  stop(): Promise<void>
}

/** A command whose output (both streams) is appended to `log`. */
export function spawnLogged(command: readonly string[], log: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const [cmd, ...args] = command
  if (cmd === undefined) throw new Error('spawnLogged: an empty command')
  const fd = openSync(log, 'a')
  try {
    const child = spawn(cmd, args, { stdio: ['ignore', fd, fd], env })
    child.on('error', () => undefined)
    return child
  } finally {
    closeSync(fd)
  }
}

/** A process in `ns` whose output goes to `log`. */
export function spawnIn(ns: string, bin: string, args: readonly string[], log: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  return spawnLogged(['ip', 'netns', 'exec', ns, bin, ...args], log, env)
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once every one is gone. */
export async function stopAll(pids: readonly number[], graceMs = 5000): Promise<void> {
  for (const pid of pids) killQuietly(pid, 'SIGTERM')
  const deadline = Date.now() + graceMs
  while (pids.some(isAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  for (const pid of pids) if (isAlive(pid)) killQuietly(pid, 'SIGKILL')
  while (pids.some(isAlive)) await new Promise((r) => setTimeout(r, 50))
}

/** Writes a kubeconfig for `server` with the admin token. */
export async function writeKubeconfig(path: string, server: string, caFile: string, token: string): Promise<void> {
  await writeFile(path, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'pinto-demo',
    clusters: [{ name: 'pinto-demo', cluster: { server, 'certificate-authority': caFile } }],
    users: [{ name: 'pinto-demo-admin', user: { token } }],
    contexts: [{ name: 'pinto-demo', context: { cluster: 'pinto-demo', user: 'pinto-demo-admin' } }],
  }, null, 2), { mode: 0o600 })
}

export async function startControlPlane(spec: ControlPlaneSpec, say: (line: string) => void): Promise<ControlPlane> {
  const { ns, address, bin, dir } = spec
  const pki = join(dir, 'pki')
  await mkdir(pki, { recursive: true })
  await authority(pki, 'pinto demo Kubernetes CA')
  const sans = [`IP:${address}`, 'IP:127.0.0.1', `IP:${spec.serviceIp}`, 'DNS:localhost', 'DNS:kubernetes', 'DNS:kubernetes.default', 'DNS:kubernetes.default.svc', 'DNS:kubernetes.default.svc.cluster.local']
  await issue(pki, 'apiserver', 'kube-apiserver', `subjectAltName=${sans.join(',')}\nextendedKeyUsage=serverAuth\n`)
  await openssl(['genrsa', '-out', 'service-account.key', '2048'], pki)
  await openssl(['rsa', '-in', 'service-account.key', '-pubout', '-out', 'service-account.pub'], pki)
  const token = randomBytes(24).toString('hex')
  // One identity for every component and the operator: the demo's cluster has one trust domain.
  await writeFile(join(pki, 'tokens.csv'), `${token},pinto-demo-admin,pinto-demo-admin,"system:masters"\n`, { mode: 0o600 })
  const caFile = join(pki, 'ca.crt')
  const kubeconfig = join(dir, 'admin.kubeconfig')
  await writeKubeconfig(kubeconfig, `https://${address}:${API_PORT}`, caFile, token)

  const children: ChildProcess[] = []
  const pids = (): number[] => children.flatMap((c) => (c.pid !== undefined ? [c.pid] : []))
  const stop = (): Promise<void> => stopAll(pids().reverse())
  try {
    say('control plane: etcd')
    children.push(spawnIn(ns, join(bin, 'etcd'), [
      '--data-dir', join(dir, 'etcd'), '--listen-client-urls', 'http://127.0.0.1:2379', '--advertise-client-urls', 'http://127.0.0.1:2379',
      '--listen-peer-urls', 'http://127.0.0.1:2380', '--log-level', 'warn',
    ], join(dir, 'etcd.log')))
    say('control plane: kube-apiserver')
    children.push(spawnIn(ns, join(bin, 'kube-apiserver'), [
      '--etcd-servers=http://127.0.0.1:2379', '--bind-address=0.0.0.0', `--secure-port=${API_PORT}`, `--advertise-address=${address}`,
      `--tls-cert-file=${join(pki, 'apiserver.crt')}`, `--tls-private-key-file=${join(pki, 'apiserver.key')}`, `--client-ca-file=${caFile}`,
      `--token-auth-file=${join(pki, 'tokens.csv')}`, '--authorization-mode=Node,RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(pki, 'service-account.pub')}`, `--service-account-signing-key-file=${join(pki, 'service-account.key')}`,
      `--service-cluster-ip-range=${spec.serviceCidr}`, '--allow-privileged=true', '--profiling=false',
      // The nodes have no DNS names: the apiserver reaches each kubelet (logs, exec) at its InternalIP.
      '--kubelet-preferred-address-types=InternalIP', `--cert-dir=${join(dir, 'serving')}`,
    ], join(dir, 'kube-apiserver.log')))
    const kubectl = async (args: readonly string[], input?: string): Promise<string> => {
      const r = await execa('ip', ['netns', 'exec', ns, join(bin, 'kubectl'), '--kubeconfig', kubeconfig, ...args], { reject: false, ...(input !== undefined ? { input } : {}) })
      if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${String(r.stderr).trim()}`)
      return String(r.stdout)
    }
    const deadline = Date.now() + 180_000
    for (;;) {
      if (!children.every((c) => c.pid !== undefined && isAlive(c.pid))) throw new Error(`the control plane exited at start; see ${dir}/*.log`)
      if ((await kubectl(['get', '--raw', '/readyz']).catch(() => '')) === 'ok') break
      if (Date.now() > deadline) throw new Error(`kube-apiserver not ready within 180 s; see ${join(dir, 'kube-apiserver.log')}`)
      await new Promise((r) => setTimeout(r, 500))
    }
    say('control plane: kube-controller-manager, kube-scheduler')
    children.push(spawnIn(ns, join(bin, 'kube-controller-manager'), [
      `--kubeconfig=${kubeconfig}`, `--service-account-private-key-file=${join(pki, 'service-account.key')}`, `--root-ca-file=${caFile}`,
      '--leader-elect=false', '--bind-address=127.0.0.1', "--controllers=*",
    ], join(dir, 'kube-controller-manager.log')))
    children.push(spawnIn(ns, join(bin, 'kube-scheduler'), [`--kubeconfig=${kubeconfig}`, '--leader-elect=false', '--bind-address=127.0.0.1'], join(dir, 'kube-scheduler.log')))
    return { kubeconfig, token, caFile, kubectl, stop }
  } catch (err) {
    await stop()
    throw err
  }
}
