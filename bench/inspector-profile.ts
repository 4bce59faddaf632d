// A CPU profile of another Node.js process through its inspector: run beside it (in its network namespace) once
// the process has opened the inspector (SIGUSR1 opens it on 127.0.0.1:9229), it starts the profiler, says
// "profiling" on stdout, and on SIGTERM stops it and writes the .cpuprofile that `cpu-profile-top` reads.
// Needs a Node.js with a global WebSocket (22 and later; the one pinto ships). Bench-only.
// Usage: node dist/bench/inspector-profile.js OUT.cpuprofile [port]

import { writeFileSync } from 'node:fs'

interface Reply {
  readonly id?: number
  readonly result?: Record<string, unknown>
  readonly error?: { message: string }
}

async function main(): Promise<void> {
  const [out, port = '9229'] = process.argv.slice(2)
  if (out === undefined) throw new Error('usage: inspector-profile OUT.cpuprofile [port]')
  // The inspector opens a moment after the signal.
  let targets: { webSocketDebuggerUrl: string }[] | undefined
  for (const until = Date.now() + 10_000; targets === undefined; ) {
    try {
      targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[]
    } catch (err) {
      if (Date.now() > until) throw new Error(`no inspector on 127.0.0.1:${port} after 10 s: ${(err as Error).message}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  const url = targets[0]?.webSocketDebuggerUrl
  if (url === undefined) throw new Error(`no inspector target on port ${port}`)
  const ws = new WebSocket(url)
  await new Promise((resolve, reject) => {
    ws.onopen = resolve
    ws.onerror = () => reject(new Error(`connecting to ${url} failed`))
  })
  let next = 0
  const waiting = new Map<number, (r: Reply) => void>()
  ws.onmessage = (m: MessageEvent) => {
    const r = JSON.parse(String(m.data)) as Reply
    if (r.id !== undefined) waiting.get(r.id)?.(r)
  }
  const call = (method: string, params: object = {}): Promise<Record<string, unknown>> => new Promise((resolve, reject) => {
    const id = ++next
    waiting.set(id, (r) => (r.error !== undefined ? reject(new Error(`${method}: ${r.error.message}`)) : resolve(r.result ?? {})))
    ws.send(JSON.stringify({ id, method, params }))
  })
  await call('Profiler.enable')
  await call('Profiler.setSamplingInterval', { interval: 500 })
  await call('Profiler.start')
  process.stdout.write('profiling\n')
  await new Promise((resolve) => process.once('SIGTERM', resolve))
  const { profile } = await call('Profiler.stop')
  writeFileSync(out, JSON.stringify(profile))
  ws.close()
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`inspector-profile: ${err.message}\n`)
    process.exit(1)
  },
)
