// Sessions captured from real BIRD 2, FRR and GoBGP (test/fixtures/captures, made by
// test/interop/capture-fixtures): every message decodes without error under the options the two
// OPENs negotiate, re-encodes to the same bytes, and carries what the daemons were configured to send.
import t from 'tap'
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import {
  codecOptions,
  decodeMessage,
  encodeMessage,
  familyKey,
  formatExtCommunity,
  formatCommunity,
  formatPrefix,
  reconcileAs4,
  type BgpMessage,
  type Capability,
  type CodecOptions,
  type OpenMessage,
  type UpdateMessage,
} from '../../../bgp/index.js'

const dir = fileURLToPath(new URL('../../../../test/fixtures/captures/', import.meta.url))

interface Originated {
  prefix: string
  communities?: string[]
  largeCommunities?: string[]
  routeTargets?: string[]
  med?: number
  localPref?: number
  prepend?: number[]
}
interface Side {
  as: number
  routerId: string
  holdTime: number
  software?: string
  originated?: Originated[]
  neighbor?: { rrClient?: boolean; as?: number }
}
interface Session {
  name: string
  sides: Record<string, Side>
  messages: Record<string, string[]>
}

function frames(hexText: string): Buffer[] {
  return hexText
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'))
    .map((l) => Buffer.from(l, 'hex'))
}

const caps = (open: OpenMessage | undefined): readonly Capability[] => open?.capabilities ?? []
const has = (open: OpenMessage | undefined, kind: Capability['kind']): boolean => caps(open).some((c) => c.kind === kind)

/** What the sender may put on the wire, given both OPENs (RFC 6793, 7911, 8654). */
function negotiated(sender: OpenMessage | undefined, receiver: OpenMessage | undefined): CodecOptions {
  const addPath = new Set<number>()
  for (const c of caps(sender)) {
    if (c.kind !== 'add-path') continue
    for (const f of c.families) {
      if (!(f.mode & 2)) continue
      const peer = caps(receiver).find((x) => x.kind === 'add-path')
      if (peer?.kind === 'add-path' && peer.families.some((g) => g.afi === f.afi && g.safi === f.safi && g.mode & 1)) addPath.add(familyKey(f.afi, f.safi))
    }
  }
  return codecOptions({
    as4: has(sender, 'four-octet-as') && has(receiver, 'four-octet-as'),
    extendedMessage: has(sender, 'extended-message') && has(receiver, 'extended-message'),
    addPath,
  })
}

function label(m: BgpMessage): string {
  if (m.type === 'notification') return `NOTIFICATION ${m.code}/${m.subcode}`
  return m.type.toUpperCase()
}

const sessions = readdirSync(dir).filter((f) => f.endsWith('.json'))
t.ok(sessions.length >= 6, `captured sessions present (${sessions.length})`)

for (const file of sessions) {
  const session = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Session
  t.test(session.name, async (t) => {
    const names = Object.keys(session.sides)
    const raw = Object.fromEntries(names.map((n) => [n, frames(readFileSync(join(dir, `${session.name}.${n}.hex`), 'utf8'))]))
    const opens = Object.fromEntries(
      names.map((n) => {
        const first = raw[n]![0]
        const m = first ? decodeMessage(first, codecOptions()) : undefined
        return [n, m?.type === 'open' ? m : undefined]
      }),
    )
    for (const n of names) {
      const peer = names.find((x) => x !== n)!
      const opts = negotiated(opens[n], opens[peer])
      const decoded = raw[n]!.map((f) => decodeMessage(f, opts))
      t.same(decoded.map(label), session.messages[n], `${n}: the message sequence`)
      decoded.forEach((m, i) => {
        if (m.type === 'update' && m.error) t.fail(`${n} message ${i}: ${m.error.message}`)
        t.equal(encodeMessage(m, opts).toString('hex'), raw[n]![i]!.toString('hex'), `${n} message ${i} (${label(m)}) re-encodes byte for byte`)
      })
      const open = opens[n]
      if (open) {
        t.equal(open.bgpId, session.sides[n]!.routerId, `${n}: BGP identifier`)
        t.equal(open.holdTime, session.sides[n]!.holdTime, `${n}: hold time`)
      }
      const updates = decoded.filter((m): m is UpdateMessage => m.type === 'update')
      for (const route of session.sides[n]!.originated ?? []) {
        const carrying = updates.find((u) => [...u.nlri, ...(u.mpReach?.nlri ?? [])].some((p) => formatPrefix(p) === route.prefix))
        if (!carrying) {
          t.fail(`${n} never announced ${route.prefix}`)
          continue
        }
        // Toward a 2-octet speaker the real path travels in AS4_PATH (RFC 6793 §4.2.3).
        const a = opts.as4 ? carrying.attributes : reconcileAs4(carrying.attributes)
        const what = `${n} ${route.prefix}`
        for (const c of route.communities ?? []) t.ok(a.communities?.map(formatCommunity).includes(c), `${what}: community ${c}`)
        for (const c of route.largeCommunities ?? []) t.ok(a.largeCommunities?.map((l) => l.join(':')).includes(c), `${what}: large community ${c}`)
        for (const c of route.routeTargets ?? []) t.ok(a.extCommunities?.map(formatExtCommunity).includes(`rt:${c}`), `${what}: route target ${c}`)
        const ibgp = session.sides[n]!.neighbor?.as === session.sides[n]!.as
        // BIRD does not send MED to eBGP peers unless told to (`med metric`); when sent, it must match.
        if (route.med !== undefined && (a.med !== undefined || ibgp || session.sides[n]!.software !== 'bird')) t.equal(a.med, route.med, `${what}: MED`)
        if (route.localPref !== undefined && ibgp) t.equal(a.localPref, route.localPref, `${what}: LOCAL_PREF`)
        if (route.prepend) {
          const path = (a.asPath ?? []).flatMap((s) => s.asns).join(' ')
          t.ok(` ${path} `.includes(` ${route.prepend.join(' ')} `), `${what}: AS path ${path} holds the prepended ${route.prepend.join(' ')}`)
        }
      }
      // Reflected routes (RFC 4456) carry the originator and the reflector's cluster id.
      for (const u of updates) {
        if (u.attributes.originatorId === undefined) continue
        t.ok(u.attributes.clusterList?.includes(session.sides[n]!.routerId), `${n}: reflected route lists cluster ${session.sides[n]!.routerId}`)
      }
    }
  })
}
