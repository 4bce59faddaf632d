// A pinto BGP speaker as its own process, for tests and benches in namespaces:
//   ip netns exec NS node dist/test/interop/pinto-runner.js CONFIG.json
// Runs one BgpSpeaker from the JSON config, answers JSON-line commands on stdin with JSON lines on stdout
// (each answer echoes the command's id), logs with pino to a file. It never touches the kernel's routes.

import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { pino, destination } from 'pino'
import { attributesToJson, formatPrefix } from '../../bgp/codec/index.js'
import { BgpSpeaker } from '../../bgp/speaker.js'
import type { Path } from '../../bgp/rib/types.js'
import { checkConfig, toAttributes, toPeerConfig, toPrefix, type PeerJson, type RunnerConfig } from './runner-config.js'

type Command = { readonly id?: number; readonly cmd: string } & Record<string, unknown>

function out(line: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(line) + '\n')
}

function pathJson(p: Path): Record<string, unknown> {
  return {
    prefix: formatPrefix(p.prefix),
    ...(p.prefix.pathId !== 0 ? { pathId: p.prefix.pathId } : {}),
    peer: p.peer?.name,
    stale: p.stale,
    nextHop: p.attrs.nextHop.length > 0 ? p.attrs.nextHop : p.attrs.attrs.nextHop === undefined ? [] : [p.attrs.attrs.nextHop],
    attrs: attributesToJson(p.attrs.attrs),
  }
}

const file = process.argv[2]
if (file === undefined) {
  process.stderr.write('usage: pinto-runner CONFIG.json\n')
  // `tap dist/test/interop/` also runs this file with no argument: that is not a failure.
  process.exit(process.env['TAP'] === '1' ? 0 : 2)
}
const config = JSON.parse(readFileSync(file, 'utf8')) as RunnerConfig
checkConfig(config)
// sync: a SIGKILLed runner (graceful-restart tests) must not lose the lines that explain what it did.
const logger = config.log !== undefined ? pino({ level: config.logLevel ?? 'info' }, destination({ dest: config.log, sync: true })) : pino({ level: 'silent' })
const speaker = new BgpSpeaker({ ...config.speaker, logger })
;(config.originate ?? []).forEach((r, i) => speaker.rib.originate(toPrefix(r.prefix, `config.originate[${i}].prefix`), toAttributes(r, `config.originate[${i}]`)))
speaker.rib.flush()
await speaker.start()
;(config.peers ?? []).forEach((p, i) => speaker.addPeer(toPeerConfig(p, `config.peers[${i}]`)))

/** Every peer by name, or the named one; throws naming the unknown peer. */
function peerNames(name: unknown): string[] {
  if (name === undefined) return speaker.peerStatus().map((s) => s.name)
  if (typeof name !== 'string' || speaker.peer(name) === undefined) throw new Error(`peer: no peer ${JSON.stringify(name)}`)
  return [name]
}

/**
 * Waits (polling every millisecond, so it works while UPDATEs stream in) until the Loc-RIB holds at least
 * `count` prefixes, or with `atMost` at most `count`.
 */
function waitLocRib(count: number, timeoutMs: number, atMost: boolean): Promise<Record<string, unknown>> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const size = speaker.rib.size
      if (atMost ? size <= count : size >= count) {
        clearInterval(timer)
        resolve({ size, at: Date.now(), peers: speaker.peerStatus().map((s) => ({ name: s.name, state: s.state, since: s.since })) })
      } else if (Date.now() - started > timeoutMs) {
        clearInterval(timer)
        reject(new Error(`wait-loc-rib: ${size} prefixes, not ${atMost ? 'at most' : 'at least'} ${count}, after ${timeoutMs} ms`))
      }
    }, 1)
  })
}

async function handle(c: Command): Promise<Record<string, unknown>> {
  switch (c.cmd) {
    case 'originate':
      speaker.originate(toPrefix(c['prefix'], 'prefix'), toAttributes(c['attrs'] ?? {}, 'attrs'))
      return {}
    case 'withdraw':
      speaker.withdraw(toPrefix(c['prefix'], 'prefix'))
      return {}
    case 'status':
      return { peers: speaker.peerStatus(), locRibSize: speaker.rib.size, pid: process.pid, port: speaker.port }
    case 'loc-rib': {
      const routes = []
      for (const [, best] of speaker.rib.locRib()) routes.push({ ...pathJson(best.path), reason: best.reason })
      return { routes }
    }
    case 'adj-rib-in': {
      const [name] = peerNames(c['peer'])
      const rp = speaker.ribPeer(name!)
      return { established: rp !== undefined, routes: rp === undefined ? [] : [...speaker.rib.adjRibIn(rp)].map(pathJson) }
    }
    case 'paths': {
      // Every path of one prefix (stale ones too: a peer's Adj-RIB-In is not readable while it is down).
      return { routes: speaker.rib.paths(toPrefix(c['prefix'], 'prefix')).map(pathJson) }
    }
    case 'refresh': {
      const dir = c['direction']
      if (dir !== 'in' && dir !== 'out') throw new Error('direction: must be "in" or "out"')
      return { sent: peerNames(c['peer']).map((n) => speaker.refresh(n, dir)) }
    }
    case 'set-peers': {
      const peers = c['peers']
      if (!Array.isArray(peers)) throw new Error('peers: must be an array')
      return { summary: speaker.setPeers((peers as PeerJson[]).map((p, i) => toPeerConfig(p, `peers[${i}]`))) }
    }
    case 'wait-loc-rib':
      return waitLocRib(Number(c['count']), Number(c['timeoutMs'] ?? 60000), c['atMost'] === true)
    case 'memory': {
      const status = readFileSync('/proc/self/status', 'utf8')
      const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
      return { vmHwmKb: kb('VmHWM'), vmRssKb: kb('VmRSS'), heapUsed: process.memoryUsage().heapUsed }
    }
    case 'stop': {
      const mode = c['mode']
      if (mode !== 'graceful' && mode !== 'admin') throw new Error('mode: must be "graceful" or "admin"')
      await speaker.stop(mode === 'graceful' ? { graceful: true } : { message: typeof c['message'] === 'string' ? c['message'] : 'pinto runner stopped' })
      // Give a queued NOTIFICATION a moment on the wire, then leave.
      setTimeout(() => process.exit(0), 200)
      return {}
    }
    default:
      throw new Error(`cmd: unknown command ${JSON.stringify(c.cmd)}`)
  }
}

const rl = createInterface({ input: process.stdin })
rl.on('line', (line) => {
  if (line.trim() === '') return
  let c: Command
  try {
    c = JSON.parse(line) as Command
  } catch (err) {
    out({ ok: false, error: `stdin: not JSON: ${(err as Error).message}` })
    return
  }
  handle(c).then(
    (r) => out({ id: c.id, ok: true, ...r }),
    (err: unknown) => out({ id: c.id, ok: false, error: err instanceof Error ? err.message : String(err) }),
  )
})
// The test that started us went away: stop as a daemon would on SIGTERM.
rl.on('close', () => process.exit(0))
process.on('SIGTERM', () => process.exit(0))
out({ event: 'ready', pid: process.pid, port: speaker.port })
