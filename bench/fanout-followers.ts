// A worker of bench/fanout.ts: many agents' event streams in one process, as the fan-out or the apiserver sees
// them. 'fanout': each follower opens the two streams an agent opens at pinto-fanout (the resources and the
// affinities, from the bench's listing). 'direct': each opens the watch of every Node an agent's kubernetes
// datastore opens at the apiserver. It counts events and bytes, and for each Node label `bench-change=N` the time
// each follower first saw it. Asked over IPC ('report'), it answers its counts. Bench-only.

import { Agent, request } from 'node:http'
import { KubeHttp } from '../config/kubernetes/kube-http.js'

export interface FollowersArgs {
  readonly mode: 'fanout' | 'direct'
  readonly count: number
  /** fanout: host:port and where each stream starts. */
  readonly address?: string
  readonly streams?: readonly { readonly prefix: string; readonly epoch: string; readonly seq: number }[]
  /** direct: the kubeconfig, and the resourceVersion the watches start after. */
  readonly kubeconfig?: string
  readonly resourceVersion?: string
}

export interface FollowersReport {
  readonly open: number
  readonly events: number
  readonly bytes: number
  readonly failures: number
  /** change number -> epoch ms at which each follower first saw it. */
  readonly seen: Record<string, number[]>
}

const args = JSON.parse(process.argv[2] ?? '{}') as FollowersArgs
let open = 0
let events = 0
let bytes = 0
let failures = 0
const seen = new Map<string, number[]>()
const CHANGE = /bench-change\\?"\s*:\s*\\?"(\d+)/

function onLine(follower: Set<string>, line: string): void {
  events++
  const m = CHANGE.exec(line)
  if (m === null) return
  const n = m[1] as string
  if (follower.has(n)) return
  follower.add(n)
  let at = seen.get(n)
  if (at === undefined) seen.set(n, (at = []))
  at.push(Date.now())
}

async function fanout(): Promise<void> {
  const address = args.address as string
  const at = address.lastIndexOf(':')
  const agent = new Agent({ keepAlive: false })
  for (let i = 0; i < args.count; i++) {
    const follower = new Set<string>()
    for (const s of args.streams ?? []) {
      const path = `/v1/watch?prefix=${encodeURIComponent(s.prefix)}&epoch=${s.epoch}&after=${s.seq}`
      await new Promise<void>((resolve) => {
        const req = request({ host: address.slice(0, at), port: Number(address.slice(at + 1)), path, agent }, (res) => {
          open++
          res.setEncoding('utf8')
          let partial = ''
          res.on('data', (chunk: string) => {
            bytes += chunk.length
            const lines = (partial + chunk).split('\n')
            partial = lines.pop() ?? ''
            for (const l of lines) if (!l.startsWith('{"type":"tick"')) onLine(follower, l)
          })
          res.on('close', () => {
            open--
            failures++
          })
          resolve()
        })
        req.on('error', () => {
          failures++
          resolve()
        })
        req.end()
      })
    }
  }
}

async function direct(): Promise<void> {
  const http = await KubeHttp.connect({ kubeconfig: args.kubeconfig as string }, 30_000)
  for (let i = 0; i < args.count; i++) {
    const follower = new Set<string>()
    let opened = false
    http.stream('/api/v1/nodes', { watch: 1, allowWatchBookmarks: true, resourceVersion: args.resourceVersion, timeoutSeconds: 3600 }, 600_000, (line) => {
      bytes += line.length + 1
      if (line.includes('"BOOKMARK"')) return
      onLine(follower, line)
    }, () => {
      if (opened) open--
      failures++
    }, () => {
      opened = true
      open++
    })
  }
}

process.on('message', (m: unknown) => {
  if (m !== 'report') return
  const report: FollowersReport = { open, events, bytes, failures, seen: Object.fromEntries(seen) }
  process.send?.(report)
})

await (args.mode === 'fanout' ? fanout() : direct())
process.send?.({ started: true })
