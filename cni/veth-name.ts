// The host-side veth name of a pod's interface, as Calico derives it: prefix + hex(sha1("namespace.pod")),
// cut to the kernel's 15-character limit; the container id stands in when the runtime gave no pod identity,
// and an interface other than the primary one adds ":<ifname>", so each interface has its own veth. Pure.

// SHA-1 from @noble/hashes rather than node:crypto: loading node:crypto would be paid by a cold plugin
// process on every pod's ADD and DEL.
import { sha1 } from '@noble/hashes/legacy.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import { PRIMARY_IFNAME } from './config.js'

export const IFNAMSIZ_MAX = 15

export function vethName(prefix: string, pod: { namespace: string; pod: string } | undefined, containerId: string, ifname: string): string {
  const base = pod !== undefined ? `${pod.namespace}.${pod.pod}` : containerId
  // ':' is in no namespace, pod name, container ID or interface name: no two interfaces share a key.
  const key = ifname === PRIMARY_IFNAME ? base : `${base}:${ifname}`
  return (prefix + bytesToHex(sha1(utf8ToBytes(key)))).slice(0, IFNAMSIZ_MAX)
}
