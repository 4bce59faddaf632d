// Records real BGP sessions between BIRD, FRR, GoBGP (and a raw TCP client) inside throwaway namespaces and
// writes them as fixtures: test/fixtures/captures/NAME.SIDE.hex (one message per line) plus NAME.json.
// A script, not a test: run `node dist/test/interop/capture-fixtures.js [NAME...]` after tsc; it cleans up all it made.

import { mkdir, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { execa } from 'execa'
import { createTopology, sweepStaleNamespaces } from '../harness/netns.js'
import { connectionBetween, sentBy, type TcpConnection } from '../harness/pcap.js'
import { messageType, negotiated, notificationCode, splitMessages, toHexLines, type Negotiated } from '../harness/bgp-hex.js'
import { SCENARIOS } from './capture-scenarios.js'
import type { SessionRecord } from './capture-steps.js'

const OUT = fileURLToPath(new URL('../../../test/fixtures/captures/', import.meta.url))

async function versions(): Promise<Record<string, string>> {
  const first = async (cmd: string, args: string[], re: RegExp): Promise<string> => {
    const r = await execa(cmd, args, { reject: false, all: true })
    return re.exec(String(r.all ?? ''))?.[1] ?? 'unknown'
  }
  return {
    bird: await first('bird', ['--version'], /BIRD version (\S+)/),
    frr: await first('/usr/lib/frr/bgpd', ['--version'], /bgpd version (\S+)/),
    gobgp: await first('gobgpd', ['--version'], /version (\S+)/),
  }
}

function describeMessages(stream: Buffer): string[] {
  return splitMessages(stream).map((m) => {
    const n = notificationCode(m)
    return n === undefined ? messageType(m) : `NOTIFICATION ${n.code}/${n.subcode}`
  })
}

async function writeRecord(rec: SessionRecord, conn: TcpConnection, daemonVersions: Record<string, string>): Promise<void> {
  const sides: Record<string, unknown> = {}
  const messages: Record<string, string[]> = {}
  for (const side of rec.sides) {
    const stream = sentBy(conn, side.address)
    await writeFile(join(OUT, `${rec.name}.${side.label}.hex`), toHexLines(splitMessages(stream)))
    messages[side.label] = describeMessages(stream)
    sides[side.label] = { ...side.facts, software: side.software, version: daemonVersions[side.software] ?? side.software, address: side.address }
  }
  const opener = rec.sides.find((s) => s.address === conn.a.src)?.label
  // How each direction is encoded, from the two OPENs (absent when one side never sent an OPEN).
  const encoding: Record<string, Negotiated> = {}
  const opens = rec.sides.map((s) => splitMessages(sentBy(conn, s.address)).find((m) => m[18] === 1))
  const [x, y] = rec.sides
  const [ox, oy] = opens
  if (x !== undefined && y !== undefined && ox !== undefined && oy !== undefined) {
    encoding[`${x.label}->${y.label}`] = negotiated(ox, oy)
    encoding[`${y.label}->${x.label}`] = negotiated(oy, ox)
  }
  const doc = {
    name: rec.name,
    description: rec.description,
    format: 'NAME.SIDE.hex: the bytes SIDE sent on the TCP connection, one whole BGP message per line (marker included), lowercase hex',
    tcp: { opener, listenerPort: conn.a.dstPort },
    sides,
    encoding,
    trigger: rec.trigger,
    messages,
  }
  await writeFile(join(OUT, `${rec.name}.json`), JSON.stringify(doc, null, 2) + '\n')
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2)
  const unknown = wanted.filter((w) => !SCENARIOS.some((s) => s.name === w))
  if (unknown.length > 0) throw new Error(`unknown scenario(s): ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`)
  await sweepStaleNamespaces()
  await mkdir(OUT, { recursive: true })
  const v = await versions()
  for (const scenario of SCENARIOS) {
    if (wanted.length > 0 && !wanted.includes(scenario.name)) continue
    const t0 = Date.now()
    const topo = await createTopology()
    const onSignal = (): void => {
      void topo.destroy().finally(() => process.exit(130))
    }
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    try {
      const { record, capture, ends } = await scenario.run(topo)
      const conns = await capture.stop()
      const conn = connectionBetween(conns, ends[0], ends[1])
      await writeRecord(record, conn, v)
      console.log(`${scenario.name}: ${((Date.now() - t0) / 1000).toFixed(1)} s, ${rec(conn)}`)
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      await topo.destroy()
    }
  }
}

function rec(conn: TcpConnection): string {
  return `${conn.a.src} sent ${conn.a.data.length} B, ${conn.b.src} sent ${conn.b.data.length} B`
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err)
  process.exitCode = 1
})
