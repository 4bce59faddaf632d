// The host-side veth name of a pod, as Calico derives it: prefix + hex(sha1("namespace.pod")), cut to the
// kernel's 15-character limit; the container id stands in when the runtime gave no pod identity. Pure.

import { createHash } from 'node:crypto'

export const IFNAMSIZ_MAX = 15

export function vethName(prefix: string, pod: { namespace: string; pod: string } | undefined, containerId: string): string {
  const key = pod !== undefined ? `${pod.namespace}.${pod.pod}` : containerId
  return (prefix + createHash('sha1').update(key).digest('hex')).slice(0, IFNAMSIZ_MAX)
}
