// A fuzzer for the BGP codec: valid messages mutated (bit flips, byte writes, truncation, length
// field edits, insertions) or random bytes behind a valid header, framed at random split points and
// decoded under random session options. The only allowed outcomes are a message or a BgpError;
// a message must survive encode → decode unchanged. Seeded, so every failure can be replayed.

import {
  BgpError,
  Framer,
  IPV4_UNICAST,
  IPV6_UNICAST,
  codecOptions,
  decodeMessage,
  encodeMessage,
  endOfRibUpdate,
  ipv4Prefix,
  ipv4PrefixList,
  ipv6PrefixList,
  makeOpen,
  messageToJson,
  notification,
  packUpdates,
  parsePrefix,
  type BgpMessage,
  type CodecOptions,
  type MpReach,
  type UpdateMessage,
} from '../../bgp/index.js'
import { Rng } from '../harness/random.js'

const OPTIONS: readonly CodecOptions[] = [
  codecOptions({ as4: true }),
  codecOptions({ as4: false }),
  codecOptions({ as4: true, addPath: new Set([IPV4_UNICAST, IPV6_UNICAST]) }),
  codecOptions({ as4: true, extendedMessage: true }),
]

function corpus(): Buffer[] {
  const o = OPTIONS[0]!
  const attrs = {
    origin: 0 as const,
    asPath: [
      { type: 2 as const, asns: [65001, 4200000001] },
      { type: 1 as const, asns: [65010, 65011] },
    ],
    nextHop: '192.0.2.1',
    med: 10,
    localPref: 100,
    atomicAggregate: true,
    aggregator: { asn: 65001, address: '192.0.2.1' },
    communities: [0xfde90064],
    originatorId: '192.0.2.9',
    clusterList: ['192.0.2.8'],
    extCommunities: ['0002fde900000064'],
    largeCommunities: [[1, 2, 3] as const],
    unknown: [{ flags: 0xe0, code: 99, value: Uint8Array.of(1, 2) }],
  }
  const v4 = Array.from({ length: 12 }, (_, i) => ipv4Prefix(((198 << 24) >>> 0) + (18 << 16) + i * 256, 24 + (i % 9)))
  const out: Buffer[] = [
    encodeMessage(makeOpen({ asn: 4200000001, holdTime: 90, bgpId: '192.0.2.1', capabilities: [
      { kind: 'multiprotocol', afi: 1, safi: 1 },
      { kind: 'multiprotocol', afi: 2, safi: 1 },
      { kind: 'route-refresh' },
      { kind: 'four-octet-as', asn: 4200000001 },
      { kind: 'graceful-restart', restartState: false, notification: true, restartTime: 120, families: [{ afi: 1, safi: 1, forwardingPreserved: true }] },
      { kind: 'add-path', families: [{ afi: 1, safi: 1, mode: 3 }] },
      { kind: 'unknown', code: 73, value: Uint8Array.of(3, 4) },
    ] }), o),
    ...packUpdates({ afi: 1, attributes: attrs, announce: v4 }, o),
    ...packUpdates({ afi: 1, withdraw: v4 }, o),
    ...packUpdates({ afi: 2, attributes: { origin: 0, asPath: [] }, nextHop: ['2001:db8::1', 'fe80::1'], announce: [parsePrefix('2001:db8:1::/48'), parsePrefix('2001:db8::/32')] }, o),
    ...packUpdates({ afi: 2, withdraw: [parsePrefix('2001:db8:1::/48')] }, o),
    encodeMessage(endOfRibUpdate(1, 1), o),
    encodeMessage(endOfRibUpdate(2, 1), o),
    encodeMessage(notification(6, 2, { shutdownMessage: 'maintenance' }), o),
    encodeMessage({ type: 'route-refresh', afi: 1, safi: 1, subtype: 1 }, o),
    encodeMessage({ type: 'keepalive' }, o),
  ]
  return out
}

function mutate(rng: Rng, seed: Buffer): Buffer {
  const b = Buffer.from(seed)
  const kind = rng.int(7)
  switch (kind) {
    case 0: // flip bits
      for (let n = 1 + rng.int(4); n > 0; n--) {
        const i = 19 + rng.int(Math.max(1, b.length - 19))
        if (i < b.length) b[i]! ^= 1 << rng.int(8)
      }
      return b
    case 1: // write random bytes
      for (let n = 1 + rng.int(6); n > 0; n--) {
        const i = 16 + rng.int(Math.max(1, b.length - 16))
        if (i < b.length) b[i] = rng.int(256)
      }
      return b
    case 2: { // truncate, keeping the header's length honest
      const len = 19 + rng.int(Math.max(1, b.length - 18))
      const t = Buffer.from(b.subarray(0, len))
      t.writeUInt16BE(len, 16)
      return t
    }
    case 3: { // edit an inner length field (any two bytes) to a boundary value
      const i = 19 + rng.int(Math.max(1, b.length - 20))
      const v = rng.pick([0, 1, 2, 3, 4, 0x7f, 0x80, 0xff, b.length - i, b.length - i + 1])
      if (i < b.length) b[i] = v & 255
      return b
    }
    case 4: { // insert random bytes, fixing the header length
      const at = 19 + rng.int(Math.max(1, b.length - 18))
      const ins = Buffer.from(Array.from({ length: 1 + rng.int(8) }, () => rng.int(256)))
      const t = Buffer.concat([b.subarray(0, at), ins, b.subarray(at)])
      t.writeUInt16BE(Math.min(t.length, 65535), 16)
      return t
    }
    case 5: { // random body behind a valid header of a random type
      const len = 19 + rng.int(200)
      const t = Buffer.alloc(len)
      t.fill(0xff, 0, 16)
      t.writeUInt16BE(len, 16)
      t[18] = 1 + rng.int(5)
      for (let i = 19; i < len; i++) t[i] = rng.int(256)
      return t
    }
    default: { // damage the header itself
      const i = rng.int(19)
      b[i] = rng.int(256)
      return b
    }
  }
}

function isNoOp(u: UpdateMessage): boolean {
  return u.endOfRib === undefined && u.withdrawn.length === 0 && u.nlri.length === 0 && !u.mpReach && !u.mpUnreach && Object.keys(u.attributes).length === 0
}

/** A decode's outcome as text: the message as JSON (IPv4 and IPv6 NLRI columns as prefixes), or the BgpError. */
function outcome(decode: () => BgpMessage): string {
  try {
    const msg = decode()
    if (msg.type !== 'update' || (msg.nlriColumns === undefined && msg.mpReach?.nlriColumns === undefined)) return JSON.stringify(messageToJson(msg))
    const { nlriColumns, mpReach, ...rest } = msg
    const reach = (m: MpReach): MpReach => {
      const { nlriColumns: columns6, ...plain } = m
      return columns6 !== undefined ? { ...plain, nlri: ipv6PrefixList(columns6) } : m
    }
    const objects: UpdateMessage = { ...rest, nlri: nlriColumns !== undefined ? ipv4PrefixList(nlriColumns) : msg.nlri, ...(mpReach !== undefined ? { mpReach: reach(mpReach) } : {}) }
    return JSON.stringify(messageToJson(objects))
  } catch (err) {
    if (!(err instanceof BgpError)) throw err
    return `BgpError ${err.code}/${err.subcode} at ${err.offset}: ${err.message}`
  }
}

export interface FuzzResult {
  readonly cases: number
  readonly messages: number
  readonly bgpErrors: number
  readonly failures: readonly string[]
}

/** Runs `cases` mutated inputs; returns counts and at most 10 failure reports with the bytes. */
export function fuzzCodec(cases: number, seed: number): FuzzResult {
  const rng = new Rng(seed)
  const seeds = corpus()
  let messages = 0
  let bgpErrors = 0
  const failures: string[] = []
  for (let n = 0; n < cases && failures.length < 10; n++) {
    const input = mutate(rng, rng.pick(seeds))
    const opts = rng.pick(OPTIONS)
    const framer = new Framer()
    framer.setExtendedMessage(opts.extendedMessage)
    try {
      const cut = rng.int(input.length + 1)
      const frames = [...framer.push(input.subarray(0, cut)), ...framer.push(input.subarray(cut))]
      for (const frame of frames) {
        // Property: the NLRI as columns (a receiving session's way) decode to the same prefixes, or fail
        // with the same error at the same offset.
        const plain = outcome(() => decodeMessage(frame, opts))
        const columns = outcome(() => decodeMessage(frame, opts, true))
        if (plain !== columns) failures.push(`columns differ for ${input.toString('hex')}\n  objects: ${plain}\n  columns: ${columns}`)
        const msg = decodeMessage(frame, opts)
        messages++
        // Property: what decoded cleanly re-encodes, and the re-encoding decodes to the same value.
        // (A message with an RFC 7606 error has lost what was malformed, so it cannot.)
        if (msg.type === 'update' && msg.error !== undefined) continue
        // Nor can an UPDATE whose only attributes were unknown non-transitive ones, dropped on
        // receipt: re-encoded it is an empty UPDATE, which is an End-of-RIB.
        if (msg.type === 'update' && isNoOp(msg)) continue
        const again = decodeMessage(encodeMessage(msg, opts), opts)
        const a = JSON.stringify(messageToJson(msg))
        const b = JSON.stringify(messageToJson(again))
        if (a !== b) failures.push(`round trip differs for ${input.toString('hex')}\n  first:  ${a}\n  second: ${b}`)
      }
    } catch (err) {
      if (err instanceof BgpError) bgpErrors++
      else failures.push(`${err instanceof Error ? err.stack : String(err)}\n  input: ${input.toString('hex')}`)
    }
  }
  return { cases, messages, bgpErrors, failures }
}
