// What the apiserver itself says a client did, for bench/ipam-scale.ts: its audit log tallied per identity
// over a window (one count per request; a watch once, when its stream starts), and its Prometheus metrics
// (request sizes, lists served from its watch cache or from etcd, watch events sent, watches open) as deltas
// between two scrapes. Bench-only; parsing is pure apart from reading the log.

import { closeSync, openSync, readSync, statSync } from 'node:fs'
import type { KubeHttp } from '../config/kubernetes/kube-http.js'

export interface Series {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export type Scrape = readonly Series[]

/** Prometheus' text format, the sample lines only. */
export function parseMetrics(text: string): Scrape {
  const out: Series[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line)
    if (m === null) continue
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string
    out.push({ name: m[1] as string, labels, value: Number(m[3]) })
  }
  return out
}

export async function scrape(admin: KubeHttp): Promise<Scrape> {
  const r = await admin.request('GET', '/metrics')
  if (r.status !== 200) throw new Error(`GET /metrics: ${r.status} ${r.text.slice(0, 200)}`)
  return parseMetrics(r.text)
}

/** The sum of `name` over the series whose labels match `where`. */
export function total(s: Scrape, name: string, where: Readonly<Record<string, string>> = {}): number {
  let sum = 0
  for (const x of s) if (x.name === name && Object.entries(where).every(([k, v]) => x.labels[k] === v)) sum += x.value
  return sum
}

/** `name` summed per value of label `by` (series matching `where`), after minus before. */
export function deltaBy(after: Scrape, before: Scrape, name: string, by: string, where: Readonly<Record<string, string>> = {}): Map<string, number> {
  const out = new Map<string, number>()
  const add = (s: Scrape, sign: number): void => {
    for (const x of s) {
      if (x.name !== name || !Object.entries(where).every(([k, v]) => x.labels[k] === v)) continue
      const key = x.labels[by] ?? ''
      out.set(key, (out.get(key) ?? 0) + sign * x.value)
    }
  }
  add(after, 1)
  add(before, -1)
  for (const [k, v] of out) if (v === 0) out.delete(k)
  return out
}

/** Where the audit log ends now: a window's tally reads from here. */
export function auditMark(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

interface AuditEvent {
  readonly stage?: string
  readonly verb?: string
  readonly auditID?: string
  readonly user?: { readonly username?: string }
  readonly objectRef?: { readonly resource?: string; readonly subresource?: string }
  readonly requestURI?: string
  readonly responseStatus?: { readonly code?: number }
}

export interface AuditTally {
  /** Requests per "verb resource[/subresource]"; a watch counted once, when its stream starts. */
  readonly byKind: ReadonlyMap<string, number>
  readonly requests: number
  readonly watches: number
  /** Answers of 400 and above, per status code. */
  readonly failures: ReadonlyMap<number, number>
}

/** The requests `user` made between two marks of the audit log. */
export function tallyAudit(path: string, from: number, to: number, user: string): AuditTally {
  const byKind = new Map<string, number>()
  const failures = new Map<number, number>()
  let requests = 0
  let watches = 0
  const fd = openSync(path, 'r')
  try {
    const chunk = Buffer.alloc(1 << 20)
    let pos = from
    let rest = ''
    while (pos < to) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, to - pos), pos)
      if (n <= 0) break
      pos += n
      rest += chunk.subarray(0, n).toString('utf8')
      const lines = rest.split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        if (!line.includes(user)) continue
        const e = JSON.parse(line) as AuditEvent
        if (e.user?.username !== user) continue
        const watch = e.verb === 'watch'
        // A watch is counted when it starts streaming; anything else when it is answered.
        if (watch ? e.stage !== 'ResponseStarted' : e.stage !== 'ResponseComplete' && e.stage !== 'Panic') continue
        const resource = e.objectRef?.resource ?? e.requestURI ?? '?'
        const kind = `${e.verb} ${resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`
        byKind.set(kind, (byKind.get(kind) ?? 0) + 1)
        requests++
        if (watch) watches++
        const code = e.responseStatus?.code ?? 0
        if (code >= 400) failures.set(code, (failures.get(code) ?? 0) + 1)
      }
    }
  } finally {
    closeSync(fd)
  }
  return { byKind, requests, watches, failures }
}

/** "list ipamhandles 300, watch nodes 1, ..." largest first. */
export function describeKinds(m: ReadonlyMap<string, number>, scale = 1, digits = 0): string {
  return [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${(v * scale).toFixed(digits)}`).join(', ') || 'none'
}

/** Bytes as KB/MB/GB with one decimal. */
export function bytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} GB`
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} KB`
  return `${n.toFixed(0)} B`
}

/**
 * What the apiserver served between two scrapes, per resource: lists (how many it answered as consistent reads
 * from its watch cache), objects returned and bytes sent, watch events sent and their bytes, and the watches open
 * at the second scrape (every watcher's, the apiserver's own included).
 */
export function describeServed(after: Scrape, before: Scrape, resources: readonly string[]): string[] {
  const lines: string[] = []
  const listBytes = deltaBy(after, before, 'apiserver_response_sizes_sum', 'resource', { verb: 'LIST' })
  const listCount = deltaBy(after, before, 'apiserver_response_sizes_count', 'resource', { verb: 'LIST' })
  const returned = deltaBy(after, before, 'apiserver_storage_list_returned_objects_total', 'resource')
  const cacheConsistent = deltaBy(after, before, 'apiserver_watch_cache_consistent_read_total', 'resource', { success: 'true', fallback: 'false' })
  const events = deltaBy(after, before, 'apiserver_watch_events_total', 'resource')
  const eventBytes = deltaBy(after, before, 'apiserver_watch_events_sizes_sum', 'resource')
  const open = new Map<string, number>()
  for (const x of after) if (x.name === 'apiserver_longrunning_requests' && x.labels.verb === 'WATCH') open.set(x.labels.resource ?? '', (open.get(x.labels.resource ?? '') ?? 0) + x.value)
  for (const r of resources) {
    const lists = listCount.get(r) ?? 0
    const ev = events.get(r) ?? 0
    const parts = [
      ...(lists > 0 ? [`${lists} lists (${cacheConsistent.get(r) ?? 0} consistent reads from the watch cache) returning ${returned.get(r) ?? 0} objects, ${bytes(listBytes.get(r) ?? 0)}`] : []),
      ...(ev > 0 ? [`${ev} watch events sent, ${bytes(eventBytes.get(r) ?? 0)}`] : []),
    ]
    if (parts.length > 0) lines.push(`${r}: ${parts.join('; ')}; ${open.get(r) ?? 0} watches open`)
  }
  return lines
}

/** etcd's own count of the requests it answered (all of the apiserver's), from its Prometheus endpoint. */
export async function etcdRequests(url: string): Promise<Scrape> {
  return parseMetrics(await (await fetch(`${url}/metrics`)).text()).filter((x) => x.name === 'grpc_server_handled_total')
}

/** "N range reads, M txns, ..." between two etcdRequests scrapes. */
export function describeEtcd(after: Scrape, before: Scrape): string {
  const d = deltaBy(after, before, 'grpc_server_handled_total', 'grpc_method')
  return describeKinds(new Map([...d].filter(([k]) => ['Range', 'Txn', 'Put', 'DeleteRange', 'LeaseGrant', 'LeaseKeepAlive'].includes(k))))
}
