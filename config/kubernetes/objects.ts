// The shape of a Kubernetes object as the kubernetes datastore reads and writes it, and the few checks every
// mapping shares: a resourceVersion read as the store revision, object names, JSON values. Pure: no I/O.

import { DatastoreError } from '../datastore.js'

export interface KubeMeta {
  name: string
  resourceVersion?: string
  uid?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
  [field: string]: unknown
}

export interface KubeObject {
  apiVersion?: string
  kind?: string
  metadata: KubeMeta
  spec?: Record<string, unknown>
  status?: Record<string, unknown>
  [field: string]: unknown
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * A resourceVersion as the store revision: Kubernetes calls it opaque, but on etcd it is etcd's revision, and the
 * Datastore contract needs revisions it can order. A value that is not a decimal integer is refused, naming where
 * it came from.
 */
export function parseRevision(rv: unknown, what: string): number {
  if (typeof rv !== 'string' || !/^[1-9]\d{0,15}$/.test(rv) || !Number.isSafeInteger(Number(rv))) {
    throw new DatastoreError(
      'invalid',
      `${what}: resourceVersion ${JSON.stringify(rv)} is not a decimal integer; the kubernetes datastore needs an apiserver whose resourceVersions are etcd revisions`,
    )
  }
  return Number(rv)
}

/** Kubernetes object names of cluster-scoped custom resources: DNS subdomains (RFC 1123), at most 253 characters. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

export function isObjectName(name: string): boolean {
  return name.length > 0 && name.length <= 253 && DNS_SUBDOMAIN.test(name)
}

/** Parses a value written through the Datastore as a JSON object; 'invalid' naming the key otherwise. */
export function parseValue(key: string, value: string): Record<string, unknown> {
  let v: unknown
  try {
    v = JSON.parse(value)
  } catch (err) {
    throw new DatastoreError('invalid', `value for ${key} is not JSON: ${(err as Error).message}`, key)
  }
  if (!isObject(v)) throw new DatastoreError('invalid', `value for ${key} is not a JSON object`, key)
  return v
}

export const invalid = (key: string, why: string): DatastoreError => new DatastoreError('invalid', `${key}: ${why}`, key)
