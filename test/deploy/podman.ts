// podman for tests: its own image store, run root and containers.conf under a temporary directory, so a
// test never sees or touches the machine's images, containers or pods, and destroy() removes all of it.
// Also builds the stand-in image (busybox-static FROM scratch) that plays pinto-node's image contract.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, copyFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execa } from 'execa'
import type { Teardown } from '../harness/netns.js'

/** podman 4.3.1 on this machine: runc and cgroupfs (crun fails in cgroups hybrid mode), small ulimits. */
const CONTAINERS_CONF = `[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
`

/**
 * The image contract with a shell in place of Node.js: `pintoctl install-cni --bin-dir B --conf-dir C`
 * writes pinto, pinto-ipam and the conflist (MTU from PINTO_CNI_MTU); the entrypoint pinto-node records
 * what the pod gave it in $PINTO_STATE_DIR and serves /livez and /readyz on PINTO_API_LISTEN until SIGTERM.
 */
const STAND_IN_PINTOCTL = `#!/bin/sh
[ "$1" = install-cni ] || { echo "stand-in pintoctl knows only install-cni" >&2; exit 2; }
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin=$2; shift 2 ;;
    --conf-dir) conf=$2; shift 2 ;;
    *) echo "stand-in pintoctl: unknown flag $1" >&2; exit 2 ;;
  esac
done
printf '#!/bin/sh\\necho stand-in pinto\\n' > "$bin/pinto" && chmod 755 "$bin/pinto"
printf '#!/bin/sh\\necho stand-in pinto-ipam\\n' > "$bin/pinto-ipam" && chmod 755 "$bin/pinto-ipam"
printf '{"cniVersion":"1.0.0","name":"k8s-pod-network","plugins":[{"type":"pinto","mtu":%s,"ipam":{"type":"pinto-ipam"}}]}\\n' "$PINTO_CNI_MTU" > "$conf/10-pinto.conflist"
`
const STAND_IN_NODE = `#!/bin/sh
state=$PINTO_STATE_DIR
# Each record is written whole (to a temporary name, then renamed): a reader never sees one half-written.
record() { cat > "$state/.$1" && mv "$state/.$1" "$state/$1"; }
env | grep '^PINTO_' | sort | record env
stat -c '%a %s' /etc/pinto/etcd-secrets/etcd-ca | record secret-mode
readlink /proc/self/ns/pid | record pid-ns
grep ' /var/run/netns ' /proc/self/mountinfo | record netns-mount
mkdir -p /www && echo ok > /www/livez && echo ok > /www/readyz
httpd -f -p "$PINTO_API_LISTEN" -h /www &
trap 'kill $!; echo SIGTERM | record stopped; exit 0' TERM
wait
`

export class Podman {
  private constructor(readonly dir: string) {}

  /** A podman with its own storage; destroy() is registered with `t.teardown`. */
  static create(t: Teardown): Podman {
    const dir = mkdtempSync(join(tmpdir(), 'pinto-podman-'))
    const p = new Podman(dir)
    t.teardown(() => p.destroy())
    writeFileSync(join(dir, 'containers.conf'), CONTAINERS_CONF)
    mkdirSync(join(dir, 'tmp'))
    return p
  }

  private get globals(): string[] {
    return ['--root', join(this.dir, 'storage'), '--runroot', join(this.dir, 'run'), '--storage-driver', 'vfs', '--tmpdir', join(this.dir, 'tmp')]
  }

  /** Runs `podman ARGS`, inside the network namespace `netns` (its /run/netns name) when given. */
  async run(args: readonly string[], opts: { netns?: string; timeoutMs?: number } = {}): Promise<string> {
    const cmd = opts.netns !== undefined ? ['nsenter', `--net=/run/netns/${opts.netns}`, 'podman'] : ['podman']
    const r = await execa(cmd[0]!, [...cmd.slice(1), ...this.globals, ...args], {
      env: { CONTAINERS_CONF: join(this.dir, 'containers.conf') },
      timeout: opts.timeoutMs ?? 120_000,
      reject: false,
    })
    if (r.exitCode !== 0) throw new Error(`podman ${args.join(' ')}: exit ${String(r.exitCode)}: ${r.stderr.trim()}`)
    return r.stdout
  }

  /** Builds the stand-in image as `tag` from busybox-static; no registry is reached. */
  async buildStandIn(tag: string): Promise<void> {
    const ctx = join(this.dir, 'stand-in')
    const rootfs = join(ctx, 'rootfs')
    for (const d of ['bin', 'usr/local/bin', 'tmp']) mkdirSync(join(rootfs, d), { recursive: true })
    copyFileSync('/bin/busybox', join(rootfs, 'bin/busybox'))
    for (const applet of ['sh', 'cat', 'chmod', 'mv', 'env', 'grep', 'kill', 'mkdir', 'printf', 'readlink', 'sort', 'stat', 'httpd']) symlinkSync('busybox', join(rootfs, 'bin', applet))
    writeFileSync(join(rootfs, 'usr/local/bin/pintoctl'), STAND_IN_PINTOCTL)
    writeFileSync(join(rootfs, 'usr/local/bin/pinto-node'), STAND_IN_NODE)
    chmodSync(join(rootfs, 'usr/local/bin/pintoctl'), 0o755)
    chmodSync(join(rootfs, 'usr/local/bin/pinto-node'), 0o755)
    writeFileSync(join(ctx, 'Containerfile'), 'FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/local/bin:/bin\nENTRYPOINT ["/usr/local/bin/pinto-node"]\n')
    await this.run(['build', '--quiet', '--tag', tag, ctx])
  }

  /** Removes every pod and container of this store, then the store. */
  async destroy(): Promise<void> {
    await this.run(['pod', 'rm', '--all', '--force', '--time', '0'], { timeoutMs: 60_000 }).catch(() => undefined)
    await this.run(['rm', '--all', '--force', '--time', '0'], { timeoutMs: 60_000 }).catch(() => undefined)
    rmSync(this.dir, { recursive: true, force: true })
  }
}
