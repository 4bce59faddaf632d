// Tests sit where a newcomer looks for them: test/<folder>/ mirrors the source folder, subfolders and all.
// A test (or its helper) at the top of test/bgp/ whose name starts with a subfolder of bgp/ ("rib-", "rib.")
// belongs in test/bgp/rib/ under the rest of its name; this names each one that does not. Reads names only.
import t from 'tap'
import { existsSync, mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../../', import.meta.url))

/** Top-level entries that are not source folders with a test twin. */
const NOT_SOURCE = new Set(['test', 'node_modules', 'dist', 'docs', 'deploy', 'scripts', 'bin', '.git', '.tap', '.cache'])

function subfolders(dir: string): string[] {
  return readdirSync(dir).filter((e) => !e.startsWith('.') && statSync(join(dir, e)).isDirectory())
}

/**
 * Every .ts file at the top of test/<src>/ (for each source folder <src>, at any depth) that is named after a
 * subfolder of <src> (`sub.ts`, `sub.test.ts`, `sub-*.ts`), with where it belongs. A name that is also a
 * source file at the top of <src> (`sub-thing.ts` beside `sub/`) is that file's test and stays.
 */
function misplacedTests(tree: string): string[] {
  const out: string[] = []
  const visit = (src: string): void => {
    const testDir = join(tree, 'test', src)
    if (!existsSync(testDir)) return
    const subs = subfolders(join(tree, src))
    for (const file of readdirSync(testDir).filter((f) => f.endsWith('.ts'))) {
      const stem = file.replace(/(\.test)?\.ts$/, '')
      if (existsSync(join(tree, src, `${stem}.ts`))) continue
      const sub = subs.find((s) => stem === s || stem.startsWith(`${s}-`))
      if (sub === undefined) continue
      const rest = stem === sub ? file : file.slice(sub.length + 1)
      out.push(`test/${src}/${file} belongs in test/${src}/${sub}/ (as ${rest})`)
    }
    for (const s of subs) visit(join(src, s))
  }
  for (const top of subfolders(tree)) if (!NOT_SOURCE.has(top)) visit(top)
  return out
}

t.test('a made-up tree: a rib- test at the top of test/bgp/ is named, one in test/bgp/rib/ is not', async (t) => {
  const tree = mkdtempSync(join(tmpdir(), 'pinto-layout-'))
  t.teardown(() => rmSync(tree, { recursive: true, force: true }))
  for (const d of ['bgp/rib', 'bgp/codec', 'test/bgp/rib']) mkdirSync(join(tree, d), { recursive: true })
  for (const f of ['bgp/speaker.ts', 'bgp/rib-pages.ts', 'bgp/rib/best-path.ts', 'bgp/codec/framer.ts']) writeFileSync(join(tree, f), '')
  for (const f of ['rib-best-path.test.ts', 'rib-helpers.ts', 'codec.test.ts', 'speaker.test.ts', 'rib-pages.test.ts', 'ribbon.test.ts', 'rib/export.test.ts'])
    writeFileSync(join(tree, 'test/bgp', f), '')
  t.same(misplacedTests(tree).sort(), [
    'test/bgp/codec.test.ts belongs in test/bgp/codec/ (as codec.test.ts)',
    'test/bgp/rib-best-path.test.ts belongs in test/bgp/rib/ (as best-path.test.ts)',
    'test/bgp/rib-helpers.ts belongs in test/bgp/rib/ (as helpers.ts)',
  ])
})

t.test("this checkout's tests mirror their source folders", async (t) => {
  t.same(misplacedTests(root), [])
})
