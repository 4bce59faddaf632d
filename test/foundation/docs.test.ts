// The documentation's contract: the README stays short (under 12 KB), and every relative link or image in
// README.md, docs/ and bench/results/ reaches a file (or a folder with a README.md), and its #anchor a heading
// of the page it names. Reads files only.
import t from 'tap'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const README_MAX_BYTES = 12288

/** Every .md file under `dir`, recursively. */
function markdownUnder(dir: string): string[] {
  const out: string[] = []
  for (const e of readdirSync(dir)) {
    const p = join(dir, e)
    if (statSync(p).isDirectory()) out.push(...markdownUnder(p))
    else if (e.endsWith('.md')) out.push(p)
  }
  return out
}

/** The page's text without fenced code blocks and (unless `keepCode`) inline code spans, where brackets are not links. */
function prose(text: string, keepCode = false): string {
  let fenced = false
  const lines: string[] = []
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced
      lines.push('')
      continue
    }
    lines.push(fenced ? '' : keepCode ? line : line.replace(/`[^`]*`/g, '``'))
  }
  return lines.join('\n')
}

/** The targets of the page's inline links and images: `[text](target)` and `![alt](target "title")`. */
function linkTargets(text: string): string[] {
  const out: string[] = []
  for (const m of prose(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push(m[1] ?? '')
  return out
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2... */
function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const line of prose(text, true).split('\n')) {
    const h = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)
    if (h === null) continue
    const raw = (h[1] ?? '').replace(/`/g, '')
    const base = raw.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

/** What is wrong with one relative target of `page`, or undefined when it resolves. */
function problem(page: string, target: string): string | undefined {
  const [pathPart = '', anchor] = target.split('#', 2)
  const path = decodeURIComponent(pathPart)
  const file = path === '' ? page : join(dirname(page), path)
  if (!existsSync(file)) return `${target}: ${relative(root, file)} does not exist`
  if (statSync(file).isDirectory()) {
    if (!existsSync(join(file, 'README.md'))) return `${target}: ${relative(root, file)} is a folder without a README.md`
    return undefined
  }
  if (anchor === undefined || anchor === '') return undefined
  if (!file.endsWith('.md')) return `${target}: an anchor into a file that is not markdown`
  if (!headingAnchors(readFileSync(file, 'utf8')).has(anchor)) return `${target}: ${relative(root, file)} has no heading #${anchor}`
  return undefined
}

t.test(`README.md is under ${README_MAX_BYTES} bytes`, async (t) => {
  const size = statSync(join(root, 'README.md')).size
  t.ok(size < README_MAX_BYTES, `README.md is ${size} bytes`)
})

t.test('the README still names the two commands', async (t) => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  t.match(readme, /^ {4}npm run demo$/m)
  t.match(readme, /^ {4}npm test$/m)
})

t.test('every relative link and image in README.md, docs/ and bench/results/ resolves', async (t) => {
  const pages = [join(root, 'README.md'), ...markdownUnder(join(root, 'docs')), ...markdownUnder(join(root, 'bench', 'results'))]
  let links = 0
  for (const page of pages) {
    for (const target of linkTargets(readFileSync(page, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
      links++
      const p = problem(page, target)
      t.equal(p, undefined, `${relative(root, page)}: ${target}`)
    }
  }
  t.ok(links > 50, `${links} relative links checked`)
})

t.test('the link reader finds links and anchors as GitHub does', async (t) => {
  const text = '# A `b` (c)\n\n## A b c\n\n## A b c\n\n[x](a.md#sec) ![i](p.png "t") `[no](n.md)`\n\n```\n[no](m.md)\n```\n'
  t.same(linkTargets(text), ['a.md#sec', 'p.png'])
  t.same([...headingAnchors(text)], ['a-b-c', 'a-b-c-1', 'a-b-c-2'])
})
