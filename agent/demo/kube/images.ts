// The images a Kubernetes demo cluster's nodes run, made here without a registry: single-layer images
// FROM scratch written straight as docker archives (the pause image from Kubernetes' own pause.c, a busybox
// pod image, agnhost for Kubernetes' network tests), and pinto's own image exported from podman. Each archive
// is kept under .cache/kube-images by its content hash, and imported into a node's containerd with ctr.

import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, copyFile, mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execa } from 'execa'
import { ROOT } from '../cluster-spec.js'

export const IMAGE_CACHE = join(ROOT, '.cache', 'kube-images')

/** The sandbox image every node's containerd pins (its name is this cluster's, not registry.k8s.io's). */
export const PAUSE_IMAGE = 'localhost/pause:3.10.2'
/** A pod image with a shell, ping, nc and an HTTP server (busybox-static's applets). */
export const BUSYBOX_IMAGE = 'localhost/pinto-test-busybox:1'

export interface ImageArchive {
  readonly ref: string
  readonly path: string
}

/** A FROM-scratch image: files copied in by their image path, symlinks, written files, and its config. */
interface ScratchImage {
  readonly ref: string
  readonly files: Readonly<Record<string, string>>
  readonly links?: Readonly<Record<string, string>>
  readonly texts?: Readonly<Record<string, string>>
  readonly entrypoint: readonly string[]
  readonly cmd?: readonly string[]
  readonly env?: readonly string[]
  readonly user?: string
}

const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex')

/** Writes `img` as a docker archive (manifest.json, the config, one layer) unless one of the same inputs exists. */
async function scratchArchive(img: ScratchImage): Promise<ImageArchive> {
  const h = createHash('sha256').update(JSON.stringify({ ...img, files: undefined }))
  for (const [at, from] of Object.entries(img.files).sort()) h.update(at).update(await readFile(from))
  const name = img.ref.replace(/^localhost\//, '').replace(/[^a-z0-9.-]/g, '_')
  const path = join(IMAGE_CACHE, `${name}-${h.digest('hex').slice(0, 16)}.tar`)
  if (existsSync(path)) return { ref: img.ref, path }
  await mkdir(IMAGE_CACHE, { recursive: true })
  const work = await mkdtemp(join(IMAGE_CACHE, '.build-'))
  try {
    const root = join(work, 'rootfs')
    for (const [at, from] of Object.entries(img.files)) {
      await mkdir(join(root, at, '..'), { recursive: true })
      await copyFile(from, join(root, at))
      await chmod(join(root, at), 0o755)
    }
    for (const [at, text] of Object.entries(img.texts ?? {})) {
      await mkdir(join(root, at, '..'), { recursive: true })
      await writeFile(join(root, at), text)
    }
    for (const [at, target] of Object.entries(img.links ?? {})) {
      await mkdir(join(root, at, '..'), { recursive: true })
      await symlink(target, join(root, at))
    }
    const out = join(work, 'out')
    await mkdir(out)
    // Same inputs, same bytes: sorted names, numeric owners, time 0.
    await execa('tar', ['--sort=name', '--numeric-owner', '--owner=0', '--group=0', '--mtime=@0', '-C', root, '-cf', join(out, 'layer.tar'), '.'])
    const layer = sha256(await readFile(join(out, 'layer.tar')))
    const config = JSON.stringify({
      architecture: 'amd64', os: 'linux',
      config: { Entrypoint: img.entrypoint, ...(img.cmd !== undefined ? { Cmd: img.cmd } : {}), Env: img.env ?? ['PATH=/bin'], ...(img.user !== undefined ? { User: img.user } : {}) },
      rootfs: { type: 'layers', diff_ids: [`sha256:${layer}`] },
    })
    const configName = `${sha256(config)}.json`
    await writeFile(join(out, configName), config)
    await writeFile(join(out, 'manifest.json'), JSON.stringify([{ Config: configName, RepoTags: [img.ref], Layers: ['layer.tar'] }]))
    await execa('tar', ['--sort=name', '--numeric-owner', '--owner=0', '--group=0', '--mtime=@0', '-C', out, '-cf', `${path}.tmp`, '.'])
    await rename(`${path}.tmp`, path)
    return { ref: img.ref, path }
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

/** pause.c from the Kubernetes module, compiled static: the process that holds each pod sandbox. */
export async function pauseImage(kubernetesSource: string): Promise<ImageArchive> {
  await mkdir(IMAGE_CACHE, { recursive: true })
  const bin = join(IMAGE_CACHE, 'pause')
  const source = join(kubernetesSource, 'build', 'pause', 'linux', 'pause.c')
  if (!existsSync(bin)) {
    await execa('gcc', ['-Os', '-static', '-DVERSION=v3.10.2', '-o', `${bin}.tmp`, source])
    await rename(`${bin}.tmp`, bin)
  }
  return scratchArchive({ ref: PAUSE_IMAGE, files: { '/pause': bin }, entrypoint: ['/pause'], user: '65535:65535' })
}

/** Applets the busybox pod image links; the tests use sh, ping, nc, httpd, hostname and sleep. */
const APPLETS = ['sh', 'ping', 'nc', 'httpd', 'hostname', 'sleep', 'cat', 'ls', 'mkdir', 'ip', 'echo', 'wget', 'printf']

export function busyboxImage(): Promise<ImageArchive> {
  const links = Object.fromEntries(APPLETS.map((a) => [`/bin/${a}`, 'busybox']))
  return scratchArchive({ ref: BUSYBOX_IMAGE, files: { '/bin/busybox': '/bin/busybox' }, links, entrypoint: ['/bin/sh'] })
}

/** A program of this machine and the shared libraries it links (by ldd), at the same paths in an image. */
async function hostProgram(path: string, at = path): Promise<Record<string, string>> {
  const files: Record<string, string> = { [at]: path }
  const out = String((await execa('ldd', [path])).stdout)
  for (const line of out.split('\n')) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line)
    if (m?.[1] !== undefined) files[m[1]] = m[1]
  }
  return files
}

/** The e2e tests' image names, as KUBE_TEST_REPO_LIST maps their registries to this machine's (e2eRepoList). */
export const E2E_REGISTRY = 'localhost/e2e-test-images'

/**
 * What the network tests' `kubectl exec` and probe scripts run in agnhost's Alpine image and in the Debian image
 * of their glibc DNS checks: a POSIX sh, busybox's applets, curl, OpenBSD nc, dig and getent.
 */
async function testTools(): Promise<Pick<ScratchImage, 'files' | 'links' | 'texts'>> {
  // Every busybox applet, as Alpine's base has them, but sh (dash: busybox's shell runs its own applets before
  // PATH) and nc (OpenBSD's: busybox's lacks -u, -v and -z).
  const applets = String((await execa('/bin/busybox', ['--list'])).stdout).split('\n').filter((a) => /^[a-z0-9_.[-]+$/.test(a) && a !== 'sh' && a !== 'nc' && a !== 'busybox')
  return {
    files: {
      '/bin/busybox': '/bin/busybox',
      ...(await hostProgram('/bin/dash', '/bin/sh')),
      ...(await hostProgram('/usr/bin/curl')),
      ...(await hostProgram('/bin/nc.openbsd', '/usr/bin/nc')),
      ...(await hostProgram('/usr/bin/dig')),
      ...(await hostProgram('/usr/bin/getent')),
    },
    links: Object.fromEntries(applets.map((a) => [`/bin/${a}`, 'busybox'])),
    // getent asks /etc/hosts, then DNS, as a Debian or Alpine base would.
    texts: { '/etc/nsswitch.conf': 'hosts: files dns\n' },
  }
}

/**
 * agnhost, the image Kubernetes' network tests run (`agnhost netexec`, `pause`, `connect`, ...): its binary from
 * the Kubernetes module, with the tools its Alpine image gives the tests (testTools) and the user its tests expect.
 */
export async function agnhostImage(agnhost: string, version: string, kubernetesSource: string): Promise<ImageArchive> {
  const porter = join(kubernetesSource, 'test', 'images', 'agnhost', 'porter')
  const tools = await testTools()
  return scratchArchive({
    ref: `${E2E_REGISTRY}/agnhost:${version}`,
    // `agnhost porter`'s TLS ports read these from its working directory, as the image's own Dockerfile puts them.
    files: { '/agnhost': agnhost, '/localhost.crt': join(porter, 'localhost.crt'), '/localhost.key': join(porter, 'localhost.key'), ...tools.files },
    links: { ...tools.links, '/agnhost-2': 'agnhost' },
    texts: {
      ...tools.texts,
      '/etc/passwd': 'root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home/user:/bin/sh\n',
      '/etc/group': 'root:x:0:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n',
      '/uploads/.keep': '',
    },
    entrypoint: ['/agnhost'], cmd: ['pause'],
    env: ['PATH=/usr/local/bin:/usr/bin:/bin'],
  })
}

/** glibc-dns-testing, the Debian image whose glibc resolver the DNS tests check beside agnhost's: the same tools. */
export async function glibcDnsImage(version: string): Promise<ImageArchive> {
  const tools = await testTools()
  return scratchArchive({ ref: `${E2E_REGISTRY}/glibc-dns-testing:${version}`, ...tools, entrypoint: ['/bin/sh'], env: ['PATH=/usr/local/bin:/usr/bin:/bin'] })
}

/** The e2e tests' busybox: the same applets as the pod image, under the tests' name. */
export function e2eBusyboxImage(version: string): Promise<ImageArchive> {
  const links = Object.fromEntries(APPLETS.map((a) => [`/bin/${a}`, 'busybox']))
  return scratchArchive({ ref: `${E2E_REGISTRY}/busybox:${version}`, files: { '/bin/busybox': '/bin/busybox' }, links, entrypoint: ['/bin/sh'] })
}

/** CoreDNS, the cluster's DNS (scripts/coredns builds it with the plugins the cluster uses). */
export function corednsImage(coredns: string, version: string): Promise<ImageArchive> {
  return scratchArchive({ ref: `localhost/coredns:${version}`, files: { '/coredns': coredns }, entrypoint: ['/coredns'], env: [] })
}

/** An image podman holds (pinto's, from scripts/image.js), exported once per image id. */
export async function podmanImage(ref: string, env: NodeJS.ProcessEnv): Promise<ImageArchive> {
  const id = String((await execa('podman', ['image', 'inspect', '--format', '{{.Id}}', ref], { env })).stdout).trim()
  const path = join(IMAGE_CACHE, `${ref.replace(/^localhost\//, '').replace(/[^a-z0-9.-]/g, '_')}-${id.slice(0, 16)}.tar`)
  if (existsSync(path)) return { ref, path }
  await mkdir(IMAGE_CACHE, { recursive: true })
  await rm(`${path}.tmp`, { force: true })
  await execa('podman', ['save', '--format', 'docker-archive', '-o', `${path}.tmp`, ref], { env })
  await rename(`${path}.tmp`, path)
  return { ref, path }
}

/** Imports archives into the containerd at `socket`, in the namespace the kubelet's CRI uses. */
export async function importImages(ctr: string, socket: string, images: readonly ImageArchive[]): Promise<void> {
  for (const img of images) {
    const r = await execa(ctr, ['--address', socket, '--namespace', 'k8s.io', 'images', 'import', img.path], { reject: false })
    if (r.exitCode !== 0) throw new Error(`ctr images import ${img.path} into ${socket}: ${String(r.stderr).trim()}`)
  }
}
