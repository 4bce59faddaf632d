// The Kubernetes components (and etcd) the tests run: scripts/kubernetes.js builds them from source once per
// machine into .cache/ and prints the directory. This owns asking for that build from a test and lifting the
// test file's timeout while a cold build runs; it never builds anything itself.
import { existsSync } from 'node:fs'
import { join } from 'node:path'

const SCRIPT = new URL('../../../scripts/kubernetes.js', import.meta.url).href

export type KubernetesComponent = 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kube-proxy' | 'kubelet' | 'kubectl' | 'etcd' | 'containerd' | 'containerd-shim-runc-v2' | 'ctr' | 'agnhost' | 'e2e.test' | 'ginkgo' | 'helm' | 'coredns'

/** A cold build of the whole set on a shared 2-core machine, with room to spare. */
const BUILD_BUDGET_MS = 120 * 60_000

/** The root tap object's timeout (structural, so the harness does not depend on tap's types). */
interface Timeout {
  setTimeout(ms: number): void
}

/** What scripts/kubernetes.js exports (it is plain JS, run by npm scripts and CI as well as from here). */
interface BuildScript {
  readonly BIN_DIR: string
  readonly KUBERNETES_VERSION: string
  readonly ETCD_VERSION: string
  ensureKubernetes(names: readonly string[]): Promise<string>
  goAbsent(): string | undefined
}

const loadScript = async (): Promise<BuildScript> => (await import(SCRIPT)) as BuildScript

/** Why these tests cannot run here, or undefined when they can (Go is what they need; the build does the rest). */
export async function kubernetesUnavailable(): Promise<string | undefined> {
  return (await loadScript()).goAbsent()
}

/** The versions scripts/kubernetes/go.mod builds, e.g. { kubernetes: 'v1.37.2', etcd: 'v3.7.0' }. */
export async function kubernetesVersions(): Promise<{ kubernetes: string; etcd: string }> {
  const script = await loadScript()
  return { kubernetes: script.KUBERNETES_VERSION, etcd: script.ETCD_VERSION }
}

/**
 * The directory holding `names`, built first when any is missing (minutes; the script's progress goes to stderr).
 * Pass the test file's root tap object: its timeout is lifted for the build and restored to TAP_TIMEOUT after.
 * A failed build throws: where Go is present the build is expected to work.
 */
export async function kubernetesBin(names: readonly KubernetesComponent[], t?: Timeout): Promise<string> {
  const script = await loadScript()
  if (names.every((n) => existsSync(join(script.BIN_DIR, n)))) return script.BIN_DIR
  t?.setTimeout(BUILD_BUDGET_MS)
  const dir = await script.ensureKubernetes(names)
  t?.setTimeout(Number(process.env['TAP_TIMEOUT'] ?? '30') * 1000)
  return dir
}
