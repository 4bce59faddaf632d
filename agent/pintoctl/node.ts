// `pintoctl node status`: the agent's BGP sessions as calicoctl prints them (peer address, peer type,
// state, since, info), read from a running agent's REST API. Formatting only; the agent owns the data.

import { apiGet, apiTarget, ApiAnswerError, ApiUnreachable, type ApiTarget } from '../api/client.js'
import { parseFlags, renderTable } from './ipam.js'
import { NODE_USAGE as USAGE } from './usage.js'
import type { Family } from '../../net/index.js'


interface PeerRow {
  name: string
  address: string
  type: string
  state: string
  since: string
  lastError: string | null
}

interface Status {
  node: string
  asn: number
  routerId: string
  uptimeSeconds: number
}

/** calicoctl's words for the peer kinds (Mesh, Global, Node), and ours for reflectors. */
const PEER_TYPE_WORDS: Readonly<Record<string, string>> = {
  mesh: 'node-to-node mesh',
  global: 'global',
  'node-specific': 'node specific',
  'reflector-client': 'route reflector client',
  reflector: 'route reflector',
}

/** BIRD's time column: the time of day for today, the date before that. */
export function sinceText(iso: string, now = new Date()): string {
  const d = new Date(iso)
  const pad = (n: number): string => String(n).padStart(2, '0')
  if (d.toDateString() === now.toDateString()) return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`
}

function uptimeText(s: number): string {
  const d = Math.floor(s / 86400)
  const h = Math.floor((s % 86400) / 3600)
  const m = Math.floor((s % 3600) / 60)
  return d > 0 ? `${d}d${h}h${m}m` : h > 0 ? `${h}h${m}m` : `${m}m${s % 60}s`
}

/** The peers table of one family, or calicoctl's "No IPv4 peers found." */
export function peersTable(peers: readonly PeerRow[], family: Family, now = new Date()): string {
  const mine = peers.filter((p) => p.address.includes(':') === (family === 6))
  if (mine.length === 0) return `No IPv${family} peers found.\n`
  const rows = mine.map((p) => [
    p.address,
    PEER_TYPE_WORDS[p.type] ?? p.type,
    // BIRD's protocol state: up once Established, start while it tries.
    p.state === 'Established' ? 'up' : 'start',
    sinceText(p.since, now),
    p.state === 'Established' || p.lastError === null ? p.state : `${p.state} ${p.lastError}`,
  ])
  return renderTable(['PEER ADDRESS', 'PEER TYPE', 'STATE', 'SINCE', 'INFO'], rows)
}

interface BfdRow {
  name: string
  peerAddress: string
  state: string
  remoteState: string
  txIntervalMs: number
  detectTimeMs: number
  desiredMinTxMs: number
  requiredMinRxMs: number
  detectMult: number
  lastDownDiag: string | null
  since: string
}

/** The BFD sessions, one line each; nothing when the node runs none. */
export function bfdTable(sessions: readonly BfdRow[], now = new Date()): string {
  if (sessions.length === 0) return ''
  const rows = sessions.map((s) => [
    s.peerAddress,
    s.state,
    s.remoteState,
    `${s.desiredMinTxMs}/${s.requiredMinRxMs} ms x${s.detectMult}`,
    `${s.txIntervalMs} ms`,
    `${s.detectTimeMs} ms`,
    sinceText(s.since, now),
    s.lastDownDiag ?? '',
  ])
  return '\nBFD status\n' + renderTable(['PEER ADDRESS', 'STATE', 'REMOTE', 'TX/RX WANTED', 'TX', 'DETECT', 'SINCE', 'LAST DOWN'], rows)
}

async function status(target: ApiTarget, json: boolean): Promise<number> {
  const [st, { peers }, { sessions }] = await Promise.all([
    apiGet<Status>(target, '/v1/status'),
    apiGet<{ peers: PeerRow[] }>(target, '/v1/peers'),
    apiGet<{ sessions: BfdRow[] }>(target, '/v1/bfd'),
  ])
  if (json) {
    process.stdout.write(JSON.stringify({ status: st, peers, bfd: sessions }, null, 2) + '\n')
    return 0
  }
  const out = [
    `pinto-node is running (node ${st.node}, AS ${st.asn}, router id ${st.routerId}, up ${uptimeText(st.uptimeSeconds)}).\n\n`,
    'IPv4 BGP status\n', peersTable(peers, 4), '\n',
    'IPv6 BGP status\n', peersTable(peers, 6),
    bfdTable(sessions),
  ]
  process.stdout.write(out.join(''))
  return 0
}

/** Runs an API-reading command body, turning the client's errors into one line and an exit code. */
export async function withApi(name: string, run: () => Promise<number>): Promise<number> {
  try {
    return await run()
  } catch (err) {
    if (err instanceof ApiUnreachable) {
      process.stderr.write(`pinto-node is not running or not reachable: ${err.message}\n`)
      return 1
    }
    if (err instanceof ApiAnswerError) {
      process.stderr.write(`pintoctl ${name}: ${err.code}: ${err.message}\n`)
      return err.status >= 500 ? 1 : 2
    }
    process.stderr.write(`pintoctl ${name}: ${(err as Error).message}\n`)
    return 1
  }
}

export async function nodeCommand(args: readonly string[]): Promise<number> {
  const [sub, ...rest] = args
  if (sub !== 'status') {
    process.stdout.write(USAGE)
    return sub === undefined || sub === '-h' || sub === '--help' ? 0 : 2
  }
  return withApi('node status', async () => {
    const { flags, rest: extra } = parseFlags(rest, ['--api', '-o'])
    if (extra.length > 0) throw new Error(`unexpected argument ${JSON.stringify(extra[0])}\n${USAGE}`)
    const o = flags.get('-o')
    if (o !== undefined && o !== 'json') throw new Error(`-o ${o}: only json is offered (the default is the table)`)
    return status(apiTarget(flags.get('--api'), process.env), o === 'json')
  })
}
