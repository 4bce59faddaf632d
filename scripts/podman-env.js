// The environment podman runs with for pinto's image build and its tests: CONTAINERS_CONF naming
// scripts/podman-containers.conf unless the caller's environment names one.
import { fileURLToPath } from 'node:url'

export const PODMAN_CONF = fileURLToPath(new URL('./podman-containers.conf', import.meta.url))

export function podmanEnv(env = process.env) {
  return { ...env, CONTAINERS_CONF: env.CONTAINERS_CONF ?? PODMAN_CONF }
}
