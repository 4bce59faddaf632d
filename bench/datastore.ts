// Raw datastore write rates (create/update per second), embedded and etcd, beside the disk's own anchor:
// write + fdatasync per second on the same directory, which bounds any store that acknowledges durably.
// Usage: node dist/bench/datastore.js [seconds=2]   (etcd figures need /usr/bin/etcd)

import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Datastore } from '../config/datastore.js'
import { openEmbeddedDatastore } from '../config/datastore-embedded.js'
import { openEtcdDatastore } from '../config/datastore-etcd.js'
import { startEtcd } from '../test/harness/etcd.js'

const seconds = Number(process.argv[2] ?? 2)

function fdatasyncRate(dir: string, ms: number): number {
  const fd = fs.openSync(path.join(dir, 'anchor'), 'a')
  const buf = Buffer.alloc(64, 1)
  let n = 0
  const end = performance.now() + ms
  while (performance.now() < end) {
    fs.writeSync(fd, buf)
    fs.fdatasyncSync(fd)
    n++
  }
  fs.closeSync(fd)
  fs.rmSync(path.join(dir, 'anchor'))
  return n / (ms / 1000)
}

/** `lanes` concurrent loops, each awaiting one write at a time; returns writes per second. */
async function writeRate(store: Datastore, tag: string, lanes: number, ms: number, kind: 'create' | 'update'): Promise<number> {
  let n = 0
  const end = performance.now() + ms
  const lane = async (l: number): Promise<void> => {
    let kv = kind === 'update' ? await store.create(`/bench/${tag}/u${l}`, '0') : undefined
    for (let i = 0; performance.now() < end; i++, n++) {
      kv = kv ? await store.update(kv.key, String(i), kv.revision) : await store.create(`/bench/${tag}/${l}/${i}`, '{"ip":"198.18.0.1","handle":"k8s-pod-network.abc"}')
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: lanes }, (_, l) => lane(l)))
  return n / ((performance.now() - started) / 1000)
}

async function child(dir: string, tag: string, ms: number): Promise<void> {
  const store = await openEmbeddedDatastore(dir)
  const rate = await writeRate(store, tag, 1, ms, 'create')
  await store.close()
  process.stdout.write(`${rate}\n`)
}

function runChild(dir: string, tag: string, ms: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', dir, tag, String(ms)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    c.stdout.on('data', (d: Buffer) => (out += d.toString()))
    c.on('exit', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`bench child exited ${code}`))))
  })
}

const fmt = (n: number): string => n.toFixed(0).padStart(6)

async function main(): Promise<void> {
  const ms = seconds * 1000
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pinto-bench-'))
  try {
    const anchor = fdatasyncRate(dir, ms)
    console.log(`anchor   write+fdatasync on ${os.tmpdir()}: ${fmt(anchor)}/s   (load average ${os.loadavg()[0]?.toFixed(1)})`)
    const store = await openEmbeddedDatastore(dir)
    const rows: Array<[string, number]> = [
      ['embedded 1 process, sequential create', await writeRate(store, 'seq', 1, ms, 'create')],
      ['embedded 1 process, sequential CAS update', await writeRate(store, 'upd', 1, ms, 'update')],
      ['embedded 1 process, 8 concurrent creates', await writeRate(store, 'conc', 8, ms, 'create')],
    ]
    await store.close()
    const per = await Promise.all([0, 1, 2, 3].map((i) => runChild(dir, `p${i}`, ms)))
    rows.push(['embedded 4 processes, sequential create (sum)', per.reduce((a, b) => a + b, 0)])
    for (const [name, rate] of rows) console.log(`${name.padEnd(48)} ${fmt(rate)}/s   ${(rate / anchor).toFixed(2)}x anchor`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  if (!fs.existsSync('/usr/bin/etcd')) return console.log('etcd: /usr/bin/etcd missing, skipped')
  const etcd = await startEtcd()
  try {
    const store = await openEtcdDatastore([etcd.endpoint])
    console.log(`${'etcd 1 client, sequential create'.padEnd(48)} ${fmt(await writeRate(store, 'seq', 1, ms, 'create'))}/s`)
    console.log(`${'etcd 1 client, sequential CAS update'.padEnd(48)} ${fmt(await writeRate(store, 'upd', 1, ms, 'update'))}/s`)
    console.log(`${'etcd 1 client, 8 concurrent creates'.padEnd(48)} ${fmt(await writeRate(store, 'conc', 8, ms, 'create'))}/s`)
    await store.close()
  } finally {
    await etcd.stop()
  }
}

if (process.argv[2] === '--child') {
  const [, , , dir, tag, ms] = process.argv
  await child(dir as string, tag as string, Number(ms))
} else {
  await main()
}
