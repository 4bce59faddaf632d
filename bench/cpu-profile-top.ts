// Where a .cpuprofile's time went: self time per function and per package or module (node_modules/<pkg>,
// node: internals, the project's own files), and the busy share (samples not idle, gc or program).
// Usage: node dist/bench/cpu-profile-top.js FILE.cpuprofile [--top 25]
import { numberArg, positionalArgs } from './args.js'
import { type ProfileNode, areaOf, readProfile, selfTimeByNode } from './cpu-profile-read.js'

function main(): void {
  const [file] = positionalArgs()
  if (file === undefined) throw new Error('usage: cpu-profile-top FILE.cpuprofile [--top N]')
  const top = numberArg('--top', 25)
  const { profile: p, byId, parent } = readProfile(file)
  const self = selfTimeByNode(p)
  const fn = new Map<string, number>()
  const area = new Map<string, number>()
  let total = 0
  let idle = 0
  for (const [id, us] of self) {
    const n = byId.get(id) as ProfileNode
    const name = n.callFrame.functionName || '(anonymous)'
    total += us
    if (name === '(idle)') {
      idle += us
      continue
    }
    const a = ['(garbage collector)', '(program)'].includes(name) ? name : areaOf(n.callFrame.url)
    fn.set(`${name} ${areaOf(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`, (fn.get(`${name} ${areaOf(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`) ?? 0) + us)
    area.set(a, (area.get(a) ?? 0) + us)
  }
  // Inclusive time: each sample counted once for every distinct function on its stack.
  const incl = new Map<string, number>()
  for (const [id, us] of self) {
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at) as ProfileNode
      const name = n.callFrame.functionName
      if (name === '' || name.startsWith('(')) continue
      seen.add(`${name} ${areaOf(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`)
    }
    for (const k of seen) incl.set(k, (incl.get(k) ?? 0) + us)
  }
  const busy = total - idle
  const pct = (us: number): string => `${((100 * us) / busy).toFixed(1).padStart(5)} %`
  console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms busy (not idle)`)
  console.log('\nself time by area (share of busy):')
  for (const [k, us] of [...area].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`)
  console.log('\nself time by function:')
  for (const [k, us] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`)
  console.log('\ninclusive time by function (self and callees):')
  for (const [k, us] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`)
}

main()
