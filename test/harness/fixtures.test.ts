// The committed captures are whole and agree with their descriptions: every line of every NAME.SIDE.hex is
// one well-framed BGP message, the message list and the per-direction encoding in NAME.json match the bytes,
// and the sessions contain what the generator promised (no decoding beyond header and OPEN capabilities).
import t from 'tap'
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { fromHexLines, messageType, negotiated, notificationCode, splitMessages } from './bgp-hex.js'

const DIR = fileURLToPath(new URL('../../../test/fixtures/captures/', import.meta.url))

interface FixtureDoc {
  name: string
  sides: Record<string, { software: string; address: string }>
  encoding: Record<string, unknown>
  messages: Record<string, string[]>
}

const docs = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(join(DIR, f), 'utf8')) as FixtureDoc)

function load(name: string, side: string): Buffer[] {
  const file = `${name}.${side}.hex`
  return fromHexLines(readFileSync(join(DIR, file), 'utf8'), file)
}

const describe = (m: Buffer): string => {
  const n = notificationCode(m)
  return n === undefined ? messageType(m) : `NOTIFICATION ${n.code}/${n.subcode}`
}

t.test('every fixture is whole and matches its JSON', async (t) => {
  t.ok(docs.length >= 7, `found ${docs.length} captured sessions`)
  for (const doc of docs) {
    const labels = Object.keys(doc.sides)
    t.equal(labels.length, 2, `${doc.name}: two sides`)
    const byLabel = new Map(labels.map((l) => [l, load(doc.name, l)]))
    for (const [label, msgs] of byLabel) {
      // Re-framing the concatenated lines must give back the same lines: each line is exactly one message.
      t.same(splitMessages(Buffer.concat(msgs)), msgs, `${doc.name}.${label}: one whole message per line`)
      t.same(msgs.map(describe), doc.messages[label], `${doc.name}.${label}: message list matches the JSON`)
    }
    const [a, b] = labels
    const oa = byLabel.get(a!)?.[0]
    const ob = byLabel.get(b!)?.[0]
    if (oa !== undefined && ob !== undefined && oa[18] === 1 && ob[18] === 1) {
      t.same(doc.encoding[`${a}->${b}`], negotiated(oa, ob), `${doc.name}: ${a}->${b} encoding matches the OPENs`)
    }
  }
})

t.test('the sessions hold what the generator promised', async (t) => {
  const get = (name: string, side: string): string[] => load(name, side).map(describe)
  t.match(get('bird-frr-ebgp', 'bird').at(-1), 'NOTIFICATION 6/2', 'BIRD ends with Cease / Administrative Shutdown')
  const shutdown = load('bird-frr-ebgp', 'bird').at(-1)!
  // RFC 9003: length byte, then UTF-8 text
  t.equal(shutdown.subarray(22, 22 + shutdown[21]!).toString('utf8'), 'pinto capture: planned maintenance')
  t.ok(load('bird-frr-ebgp', 'bird').some((m) => m[18] === 5 && m[21] === 2), 'BIRD sent an EoRR (enhanced route refresh)')
  t.ok(load('bird-frr-ebgp', 'frr').some((m) => m[18] === 5 && m[21] === 0), 'FRR sent a ROUTE-REFRESH request')
  const rr = JSON.parse(readFileSync(join(DIR, 'gobgp-bird-ibgp-rr.json'), 'utf8')) as FixtureDoc
  t.same((rr.encoding['bird->gobgp'] as { addPath: string[] }).addPath, ['1/1', '2/1'], 'add-path negotiated for IPv4 and IPv6')
  const as2 = load('bird-as2-frr-as4', 'frr')
  t.equal(as2[0]!.readUInt16BE(20), 23456, 'the 4-octet speaker opens with AS_TRANS')
  for (const daemon of ['bird', 'frr', 'gobgp']) {
    const last = load(`bad-peer-as-${daemon}`, daemon).at(-1)!
    t.same(notificationCode(last), { code: 2, subcode: 2 }, `${daemon} answers a wrong peer AS with 2/2 Bad Peer AS`)
  }
})
