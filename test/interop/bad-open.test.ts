// Bad OPENs refused by pinto with the right NOTIFICATION, as the peer sees it: BIRD, configured in an AS
// pinto does not expect, reports "Bad peer AS" in its CLI; raw clients (hand-built OPENs, so they can be
// wrong in ways no daemon allows) read back an unacceptable-hold-time and a bad-identifier NOTIFICATION,
// decoded with pinto's codec.
import t from 'tap'
import { createTopology, type NetNode, type Topology } from '../harness/netns.js'
import { startBird } from '../harness/bird.js'
import { splitMessages } from '../harness/bgp-hex.js'
import { waitFor } from '../harness/wait.js'
import { codecOptions, decodeMessage, type NotificationMessage } from '../../bgp/codec/index.js'
import { Pinto } from './pinto.js'
import { peerTo } from './sessions-suite.js'

const PINTO = '192.0.2.1'

/** OPEN, RFC 4271 §4.2, with multiprotocol IPv4 unicast and 4-octet AS; fields as given, right or wrong. */
function rawOpen(as: number, hold: number, id: string): Buffer {
  const caps = Buffer.from([2, 6, 1, 4, 0, 1, 0, 1, 2, 6, 65, 4, (as >>> 24) & 255, (as >>> 16) & 255, (as >>> 8) & 255, as & 255])
  const body = Buffer.from([4, (as >>> 8) & 255, as & 255, (hold >>> 8) & 255, hold & 255, ...id.split('.').map(Number), caps.length])
  const len = 19 + body.length + caps.length
  return Buffer.concat([Buffer.alloc(16, 0xff), Buffer.from([len >>> 8, len & 255, 1]), body, caps])
}

// Runs in the client's namespace: connect, send the OPEN, print everything received (hex) when pinto closes.
const CLIENT_JS = `
const net = require('node:net')
const [host, localAddress, hex] = process.argv.slice(1)
const got = []
const s = net.connect({ host, port: 179, localAddress }, () => s.write(Buffer.from(hex, 'hex')))
s.on('data', (d) => got.push(d))
s.on('close', () => { process.stdout.write(Buffer.concat(got).toString('hex')); process.exit(0) })
s.on('error', (e) => { console.error(e.message); process.exit(1) })
setTimeout(() => { console.error('pinto did not close the connection in 10 s'); process.exit(2) }, 10000).unref()
`

async function notificationFor(topo: Topology, client: NetNode, open: Buffer): Promise<NotificationMessage> {
  const r = await topo.exec(client.ns, process.execPath, ['-e', CLIENT_JS, PINTO, client.v4!, open.toString('hex')], { timeout: 15000 })
  const msgs = splitMessages(Buffer.from(String(r.stdout), 'hex')).map((m) => decodeMessage(m, codecOptions()))
  const n = msgs.find((m): m is NotificationMessage => m.type === 'notification')
  if (n === undefined) throw new Error(`no NOTIFICATION from pinto; got ${msgs.map((m) => m.type).join(', ')}`)
  return n
}

t.test('bad OPENs are refused with the right NOTIFICATION', async (t) => {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: `${PINTO}/24` })
  const nb = await topo.addNode({ name: 'bird', v4: '192.0.2.2/24' })
  const nh = await topo.addNode({ name: 'rawhold', v4: '192.0.2.8/24' })
  const ni = await topo.addNode({ name: 'rawid', v4: '192.0.2.9/24' })
  const bird = await startBird(topo, nb, {
    routerId: nb.v4!,
    as: 65001,
    neighbors: [{ name: 'pinto', address: PINTO, as: 65000, families: ['ipv4'], passive: true }],
  })
  const pinto = await Pinto.start(topo, np, {
    speaker: { asn: 65000, routerId: PINTO, listen: { port: 179, hosts: [PINTO] } },
    peers: [
      // BIRD really is AS 65001.
      peerTo('bird', nb, np, 65099, { families: ['ipv4'] }),
      peerTo('rawhold', nh, np, 65008, { families: ['ipv4'], passive: true }),
      peerTo('rawid', ni, np, 65009, { families: ['ipv4'], passive: true }),
    ],
  })

  await t.test('wrong peer AS: BIRD hears OPEN Message Error / Bad Peer AS', async (t) => {
    const text = await waitFor(async () => {
      const out = await bird.birdc('show', 'protocols', 'all', 'pinto')
      return /Bad peer AS/i.test(out) ? out : undefined
    }, { timeoutMs: 15000, intervalMs: 200, what: 'BIRD reporting the NOTIFICATION from pinto' })
    t.match(text, /Received: Bad peer AS/i, 'BIRD: "Received: Bad peer AS"')
    const st = await pinto.peer('bird')
    t.match(st.lastError ?? '', /Bad Peer AS/, `pinto says why: ${st.lastError}`)
    t.not(st.state, 'Established')
  })

  await t.test('hold time 2: OPEN Message Error / Unacceptable Hold Time (2/6)', async (t) => {
    const n = await notificationFor(topo, nh, rawOpen(65008, 2, nh.v4!))
    t.same([n.code, n.subcode], [2, 6])
  })

  await t.test('BGP identifier 0.0.0.0: OPEN Message Error / Bad BGP Identifier (2/3)', async (t) => {
    const n = await notificationFor(topo, ni, rawOpen(65009, 90, '0.0.0.0'))
    t.same([n.code, n.subcode], [2, 3])
  })
})
