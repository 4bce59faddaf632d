// natOutgoing: an nftables table pinto owns (`inet pinto`) masquerading traffic from a natOutgoing pool to
// anywhere outside all pools. The ruleset text is rendered purely and loaded atomically with `nft -f -`;
// no other table is ever read or touched.

import { formatCidr, parseIfAddr, type Family } from '../net/index.js'
import type { IPPool } from '../config/index.js'
import { runChecked, type ProcessRunner } from './runner.js'

export const NAT_TABLE = 'pinto'

function setDecl(name: string, type: string, cidrs: readonly string[]): string {
  const elements = cidrs.length > 0 ? ` elements = { ${cidrs.join(', ')} };` : ''
  return `  set ${name} { type ${type}; flags interval;${elements} }`
}

/**
 * The whole table as one nft script. Declaring the table, deleting it and declaring it again in one file is
 * nft's idiom for an atomic replace that also works when the table does not exist yet. With no natOutgoing
 * pool the table is simply removed.
 */
export function renderNatRuleset(pools: readonly IPPool[], table = NAT_TABLE): string {
  const all: Record<Family, string[]> = { 4: [], 6: [] }
  const masq: Record<Family, string[]> = { 4: [], 6: [] }
  pools.forEach((p, i) => {
    const c = parseIfAddr(p.spec.cidr, `pools[${i}].spec.cidr`).cidr
    all[c.family].push(formatCidr(c))
    if (p.spec.natOutgoing === true) masq[c.family].push(formatCidr(c))
  })
  const reset = `table inet ${table}\ndelete table inet ${table}\n`
  if (masq[4].length === 0 && masq[6].length === 0) return reset
  return (
    reset +
    [
      `table inet ${table} {`,
      setDecl('pools4', 'ipv4_addr', all[4]),
      setDecl('masq4', 'ipv4_addr', masq[4]),
      setDecl('pools6', 'ipv6_addr', all[6]),
      setDecl('masq6', 'ipv6_addr', masq[6]),
      '  chain postrouting {',
      '    type nat hook postrouting priority srcnat; policy accept;',
      '    ip saddr @masq4 ip daddr != @pools4 masquerade',
      '    ip6 saddr @masq6 ip6 daddr != @pools6 masquerade',
      '  }',
      '}',
    ].join('\n') +
    '\n'
  )
}

export async function applyNat(ctx: { runner: ProcessRunner; netns?: string }, pools: readonly IPPool[], table = NAT_TABLE): Promise<string> {
  const script = renderNatRuleset(pools, table)
  await runChecked(ctx.runner, 'nft', ['-f', '-'], { input: script, ...(ctx.netns !== undefined ? { netns: ctx.netns } : {}) })
  return script
}
