// pinto's default paths on the machine itself (a real node's), which tests, the demo and --help must leave
// alone, and a snapshot of only what pinto could have made there: its own directories whole, and in the
// CNI directories every program on the machine shares only the entries named for pinto.

import { existsSync } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'

/** pinto-node's defaults: directories nothing but pinto writes to. */
export const PINTO_DIRS = ['/var/run/pinto', '/var/lib/pinto'] as const
/** install-cni's defaults: shared with podman, containerd and every other CNI user, which change them at will. */
export const SHARED_CNI_DIRS = ['/opt/cni/bin', '/etc/cni/net.d'] as const

/** `dir`'s entries that `keep` names; an absent directory is noted as such when it is pinto's own. */
async function entries(dir: string, keep: (name: string) => boolean, own: boolean): Promise<string[]> {
  // A shared directory appearing or going (podman makes /etc/cni/net.d on its first run) is not pinto's doing.
  if (!existsSync(dir)) return own ? [`${dir} (absent)`] : []
  const names = (await readdir(dir)).filter(keep).sort()
  // With each entry's change time: a file rewritten or a socket bound again shows up too.
  return Promise.all(names.map(async (e) => `${join(dir, e)} ${(await stat(join(dir, e)).catch(() => undefined))?.ctimeMs ?? 'gone'}`))
}

/**
 * What pinto has in the machine's default paths: every entry of its own directories, and the entries of
 * the shared CNI directories whose names say pinto (its plugins, 10-pinto.conflist, their temp files).
 * Another program's file there, or the directory itself made or removed, is not pinto's doing, so it is not
 * compared. `dirs` stand in for the machine's in the helper's own test.
 */
export async function pintoFootprint(dirs: { own: readonly string[]; shared: readonly string[] } = { own: PINTO_DIRS, shared: SHARED_CNI_DIRS }): Promise<string[]> {
  const own = await Promise.all(dirs.own.map((d) => entries(d, () => true, true)))
  const shared = await Promise.all(dirs.shared.map((d) => entries(d, (name) => name.includes('pinto'), false)))
  return [...own, ...shared].flat()
}
