// Captures how each real daemon answers an OPEN with the wrong peer AS: a plain TCP client in its own
// namespace sends one hand-built OPEN (not through pinto's codec: these fixtures exist to test that codec)
// and reads until the daemon closes. One scenario per daemon; all passive so only the client connects.

import type { NetNode, Topology } from '../harness/netns.js'
import type { Daemon, SpeakerSpec } from '../harness/daemons.js'
import { startBird } from '../harness/bird.js'
import { startFrr } from '../harness/frr.js'
import { startGobgp } from '../harness/gobgp.js'
import { startCapture } from '../harness/tcpdump.js'
import { waitFor } from '../harness/wait.js'
import { isType, nodes, side, waitClosed, waitSent, type Scenario } from './capture-steps.js'

const DAEMON = '192.0.2.1'
const CLIENT = '192.0.2.9'
const EXPECTED_AS = 65009
const SENT_AS = 65099
const HOLD = 90

/** OPEN, RFC 4271 §4.2, with capabilities MP (IPv4 unicast) and 4-octet AS (RFC 6793). */
export function badOpen(): Buffer {
  const caps = Buffer.from([
    2, 6, 1, 4, 0, 1, 0, 1, // param 2 (capabilities), cap 1 (multiprotocol) AFI 1 SAFI 1
    2, 6, 65, 4, ...u32(SENT_AS), // cap 65 (4-octet AS) = SENT_AS
  ])
  const body = Buffer.from([4, ...u16(SENT_AS), ...u16(HOLD), 192, 0, 2, 9, caps.length])
  const len = 19 + body.length + caps.length
  return Buffer.concat([Buffer.alloc(16, 0xff), Buffer.from([...u16(len), 1]), body, caps])
}

function u16(n: number): number[] {
  return [(n >>> 8) & 0xff, n & 0xff]
}
function u32(n: number): number[] {
  return [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]
}

// Runs inside the client namespace: connect, send the OPEN, read until the daemon closes, then close too.
const CLIENT_JS = `
const net = require('node:net')
const [host, localAddress, hex] = process.argv.slice(1)
const s = net.connect({ host, port: 179, localAddress }, () => s.write(Buffer.from(hex, 'hex')))
s.on('data', () => {})
s.on('close', () => process.exit(0))
s.on('error', (e) => { console.error(e.message); process.exit(1) })
setTimeout(() => { console.error('daemon did not close the connection in 10 s'); process.exit(2) }, 10000).unref()
`

type Starter = (topo: Topology, node: NetNode, spec: SpeakerSpec) => Promise<Daemon>

function scenario(kind: 'bird' | 'frr' | 'gobgp', start: Starter): Scenario {
  const name = `bad-peer-as-${kind}`
  return {
    name,
    async run(topo) {
      const [nd, nc] = await nodes(topo, [
        { name: kind, v4: `${DAEMON}/24` },
        { name: 'client', v4: `${CLIENT}/24` },
      ])
      const cap = await startCapture(topo, nd!, name)
      const daemon = await start(topo, nd!, {
        routerId: DAEMON,
        as: 65001,
        holdTime: HOLD,
        neighbors: [{ name: 'rawpeer', address: CLIENT, as: EXPECTED_AS, families: ['ipv4'], passive: true }],
      })
      // Wait until the daemon listens, or the client's SYN may meet a RST.
      await waitListening(topo, nd!)
      await topo.exec(nc!.ns, process.execPath, ['-e', CLIENT_JS, DAEMON, CLIENT, badOpen().toString('hex')], { timeout: 15000 })
      await waitSent(cap, DAEMON, CLIENT, `NOTIFICATION from ${kind}`, (ms) => ms.some(isType(3)))
      await waitClosed(cap, DAEMON, CLIENT)
      return {
        capture: cap,
        ends: [DAEMON, CLIENT],
        record: {
          name,
          description: `A plain TCP client sends an OPEN with My AS ${SENT_AS} to ${kind}, which expects AS ${EXPECTED_AS} from that address; ${kind} answers with NOTIFICATION OPEN Message Error / Bad Peer AS (2/2) and closes.`,
          sides: [
            side(kind, daemon, CLIENT),
            { label: 'client', address: CLIENT, software: 'raw-client', facts: { as: SENT_AS, routerId: CLIENT, holdTime: HOLD, note: 'hand-built OPEN: capabilities multiprotocol IPv4 unicast and 4-octet AS; sends nothing else' } },
          ],
          trigger: [`${kind} configured with neighbor ${CLIENT} remote AS ${EXPECTED_AS}, passive`, `client connects from ${CLIENT} and sends its OPEN, then reads until the daemon closes`],
        },
      }
    },
  }
}

async function waitListening(topo: Topology, node: NetNode): Promise<void> {
  await waitFor(async () => String((await topo.exec(node.ns, 'ss', ['-Hltn', 'sport = :179'])).stdout).trim() !== '', {
    timeoutMs: 5000,
    what: `a listener on port 179 in ${node.name}`,
  })
}

export const BAD_PEER_AS: readonly Scenario[] = [scenario('bird', startBird), scenario('frr', (t, n, s) => startFrr(t, n, s)), scenario('gobgp', startGobgp)]
