// `pintoctl ipam show|check|release`: the operator's view of IPAM, with calicoctl's tables and wording.
// It reads the store named by PINTO_DATASTORE (like the agent) and changes it only through ipam/'s CAS paths.

import { readFileSync, writeFileSync } from 'node:fs'
import { type Datastore, openDatastoreFromEnv } from '../../config/index.js'
import { cidrContains, cidrSize, formatCidr, parseAddr } from '../../net/index.js'
import { type AllocationBlock, affinityNode, blockCidr, blockInUse, ordinalAddress, checkIpam, describeProblem, repairIpam, Ipam, BLOCKS_PREFIX, decodeBlock } from '../../ipam/index.js'
import { loadPoolSpecs } from '../ipam-service-pools.js'
import { liveAddresses } from '../live-interfaces.js'
import { IPAM_USAGE as USAGE } from './usage.js'


/** Renders a table the way calicoctl's tablewriter does: +---+ rules, centred headings, padded cells. */
export function renderTable(headings: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headings.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+\n`
  const centre = (s: string, w: number): string => {
    const left = Math.floor((w - s.length) / 2)
    return ' '.repeat(left) + s + ' '.repeat(w - s.length - left)
  }
  const line = (cells: readonly string[], fmt: (s: string, w: number) => string): string =>
    `| ${cells.map((c, i) => fmt(c, widths[i] as number)).join(' | ')} |\n`
  return rule + line(headings, centre) + rule + rows.map((r) => line(r, (s, w) => s.padEnd(w))).join('') + rule
}

/** Flags as `--name=value`, `--name value` or bare `--name`; everything else is positional. */
export function parseFlags(args: readonly string[], valued: readonly string[]): { flags: Map<string, string>; rest: string[] } {
  const flags = new Map<string, string>()
  const rest: string[] = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string
    if (!a.startsWith('-')) {
      rest.push(a)
      continue
    }
    const eq = a.indexOf('=')
    const name = eq < 0 ? a : a.slice(0, eq)
    if (eq >= 0) flags.set(name, a.slice(eq + 1))
    else if (valued.includes(name)) {
      const v = args[++i]
      if (v === undefined) throw new Error(`${name} needs a value`)
      flags.set(name, v)
    } else flags.set(name, '')
  }
  return { flags, rest }
}

const pct = (n: bigint, total: bigint): string => `${n} (${total === 0n ? 0 : Number((n * 100n) / total)}%)`

async function show(ipam: Ipam, blocks: readonly AllocationBlock[], flags: Map<string, string>, out: (s: string) => void): Promise<number> {
  const ip = flags.get('--ip')
  if (ip !== undefined) {
    const { family, value } = parseAddr(ip, '--ip')
    for (const b of blocks) {
      const cidr = blockCidr(b)
      if (!cidrContains(cidr, family, value)) continue
      const attr = b.allocations[Number(value - cidr.base)]
      if (attr === null || attr === undefined) break
      const a = b.attributes[attr]
      out(`IP ${ip} is in use\nHandle ID: ${a?.handleId ?? '(none)'}\nAttributes:\n`)
      for (const [k, v] of Object.entries(a?.secondary ?? {})) out(`  ${k}: ${v}\n`)
      return 0
    }
    out(`${ip} is not assigned\n`)
    return 0
  }
  if (flags.has('--show-borrowed')) {
    const rows: string[][] = []
    for (const b of blocks) {
      const owner = affinityNode(b) ?? ''
      b.allocations.forEach((attr, ord) => {
        const a = attr === null ? undefined : b.attributes[attr]
        const node = a?.secondary['node']
        if (a === undefined || node === undefined || node === owner) return
        const to = a.secondary['pod'] !== undefined ? `/${a.secondary['namespace'] ?? ''}/${a.secondary['pod']}` : (a.handleId ?? '')
        rows.push([ordinalAddress(blockCidr(b), ord), node, b.cidr, owner, a.secondary['type'] ?? 'pod', to])
      })
    }
    out(renderTable(['IP', 'BORROWING-NODE', 'BLOCK', 'BLOCK OWNER', 'TYPE', 'ALLOCATED-TO'], rows))
    return 0
  }
  const rows: string[][] = []
  for (const pool of await ipam.pools()) {
    const mine = blocks.filter((b) => cidrContains(pool.cidr, pool.cidr.family, blockCidr(b).base))
    const total = cidrSize(pool.cidr)
    const used = BigInt(mine.reduce((n, b) => n + blockInUse(b), 0))
    rows.push(['IP Pool', formatCidr(pool.cidr), String(total), pct(used, total), pct(total - used, total)])
    if (flags.has('--show-blocks')) {
      for (const b of mine) {
        const size = BigInt(b.allocations.length)
        const inUse = BigInt(blockInUse(b))
        rows.push(['Block', b.cidr, String(size), pct(inUse, size), pct(size - inUse, size)])
      }
    }
  }
  out(renderTable(['GROUPING', 'CIDR', 'IPS TOTAL', 'IPS IN USE', 'IPS FREE'], rows))
  return 0
}

async function check(ipam: Ipam, flags: Map<string, string>, out: (s: string) => void): Promise<number> {
  const nodes = flags.get('--nodes')
  const handlesFile = flags.get('--handles')
  // The pod interfaces of the host pintoctl runs on: each address one uses must be its attachment's.
  const live = await liveAddresses().catch((err: Error) => err)
  const report = await checkIpam(ipam, {
    ...(nodes !== undefined ? { liveNodes: nodes.split(',').filter((n) => n !== '') } : {}),
    ...(handlesFile !== undefined ? { liveHandles: readFileSync(handlesFile, 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '') } : {}),
    ...(live instanceof Error ? {} : { liveAddresses: live }),
  })
  out(`Checking IPAM for inconsistencies...\n\nLoading all IPAM blocks...\nFound ${report.blocks} IPAM blocks.\n`)
  out(` IPAM block affinities: ${report.affinities}\n IPAM handles: ${report.handles}\n Allocated IPs: ${report.allocations}\n`)
  out(live instanceof Error ? ` Pod interfaces on this host: not read (${live.message})\n\n` : ` Addresses of pod interfaces on this host: ${live.length}\n\n`)
  if (nodes === undefined) out('No --nodes given: blocks and affinities of deleted nodes are not judged.\n')
  if (handlesFile === undefined) out('No --handles given: allocations are not judged against live workloads.\n')
  const leaked = report.problems.filter((p) => p.kind === 'leaked-allocation').length
  out(`Found ${leaked} IPs that are allocated in IPAM but not actually in use.\n`)
  for (const p of report.problems) out(`  ${describeProblem(p)}\n`)
  const file = flags.get('-o')
  if (file !== undefined) writeFileSync(file, JSON.stringify(report, null, 2) + '\n')
  out(`Check complete; found ${report.problems.length} problems.\n`)
  if (flags.has('--repair') && report.problems.length > 0) {
    const r = await repairIpam(ipam, report)
    out(`Repaired ${r.fixed} problems.\n`)
    for (const f of r.failed) out(`  not repaired: ${describeProblem(f.problem)}: ${f.error}\n`)
    return r.failed.length === 0 ? 0 : 1
  }
  return 0
}

export async function ipamCommand(args: readonly string[]): Promise<number> {
  const [sub, ...rest] = args
  let flags: Map<string, string>
  try {
    flags = parseFlags(rest, ['--ip', '--nodes', '--handles', '-o']).flags
  } catch (err) {
    process.stderr.write(`pintoctl ipam: ${(err as Error).message}\n${USAGE}`)
    return 2
  }
  if (sub !== 'show' && sub !== 'check' && sub !== 'release') {
    process.stdout.write(USAGE)
    return sub === undefined || sub === '-h' || sub === '--help' ? 0 : 2
  }
  const out = (s: string): void => void process.stdout.write(s)
  let store: Datastore | undefined
  try {
    // Every ipam command reads or repairs a store that exists; none may leave an empty one behind.
    store = await openDatastoreFromEnv(process.env, { embedded: { create: false } })
    const ipam = new Ipam(store, { pools: await loadPoolSpecs(store) })
    if (sub === 'check') return await check(ipam, flags, out)
    if (sub === 'release') {
      const ip = flags.get('--ip')
      if (ip === undefined || ip === '') throw new Error('release needs --ip=<IP>')
      parseAddr(ip, '--ip')
      const r = await ipam.releaseIPs([{ address: ip }])
      if (r.released.length === 0) {
        process.stderr.write(`IP address ${ip} is not assigned (${r.skipped[0]?.reason ?? 'unknown'})\n`)
        return 1
      }
      out(`Successfully released IP address ${ip}\n`)
      return 0
    }
    const blocks = (await store.list(BLOCKS_PREFIX)).items.map((kv) => decodeBlock(kv.key, kv.value))
    blocks.sort((a, b) => (blockCidr(a).base < blockCidr(b).base ? -1 : 1))
    return await show(ipam, blocks, flags, out)
  } catch (err) {
    process.stderr.write(`pintoctl ipam ${sub}: ${(err as Error).message}\n`)
    return 1
  } finally {
    await store?.close()
  }
}
