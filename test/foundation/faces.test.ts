// Each top-level folder has a face, its index.ts: another folder imports it through that file only, so a
// folder can change its insides without the rest of pinto noticing. This reads every import and export
// of the source folders (TypeScript's own pre-processor, so multi-line and type-only imports count too)
// and names, file:line, each one that reaches past a face. Tests and benches may open any file.

import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = fileURLToPath(new URL('../../../', import.meta.url))

/** The folders whose insides are their own. */
const FOLDERS = ['net', 'agent', 'bgp', 'felix', 'cni', 'ipam', 'config'] as const

/**
 * Modules any folder may import past their folder's face, each with why. Keep this short: a need that
 * is not the ground floor is a method or an export the face should grow.
 */
const ALLOWED: Readonly<Record<string, string>> = {
  'net/ip.ts':
    "address text and its numeric forms with no package behind them: the per-pod CNI plugins' bundle refuses ip-num, which net/index.ts brings through net/parse.ts",
}

interface Import {
  readonly file: string
  readonly line: number
  readonly target: string
}

function sources(dir: string): string[] {
  const out: string[] = []
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`
    // The browser app is its own program, built apart (tsconfig excludes it).
    if (e.isDirectory()) {
      if (rel !== 'agent/ui/browser') out.push(...sources(rel))
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(rel)
  }
  return out
}

/** Every relative import, export-from and import() of a file, resolved to a source path. */
function importsOf(file: string): Import[] {
  const text = readFileSync(join(root, file), 'utf8')
  const info = ts.preProcessFile(text, true, true)
  const out: Import[] = []
  for (const ref of info.importedFiles) {
    if (!ref.fileName.startsWith('.')) continue
    const target = relative(root, resolve(dirname(join(root, file)), ref.fileName.replace(/\.js$/, '.ts'))).split(sep).join('/')
    out.push({ file, line: text.slice(0, ref.pos).split('\n').length, target })
  }
  return out
}

/** Why `i` may not be: its target is inside another folder and is not that folder's face. */
function bypass(i: Import): boolean {
  const from = i.file.split('/')[0]
  const to = i.target.split('/')[0]
  if (from === to || !(FOLDERS as readonly string[]).includes(to ?? '')) return false
  if (i.target === `${to}/index.ts`) return false
  return ALLOWED[i.target] === undefined
}

t.test('every folder imports another only through its index.ts', async (t) => {
  const all = FOLDERS.flatMap((f) => sources(f)).flatMap(importsOf)
  t.ok(all.length > 100, `${all.length} imports read`)
  const bad = all.filter(bypass).map((i) => `${i.file}:${i.line} imports ${i.target}`)
  t.same(bad, [], 'no import past a face (file:line, and the module it reaches)')
})

t.test('net/ is the ground floor: it imports no other folder', async (t) => {
  const up = sources('net').flatMap(importsOf).filter((i) => !i.target.startsWith('net/')).map((i) => `${i.file}:${i.line} imports ${i.target}`)
  t.same(up, [], 'every relative import of net/ stays inside net/')
})

t.test('the check sees what it must', async (t) => {
  t.ok(bypass({ file: 'agent/node.ts', line: 1, target: 'bgp/rib/rib.ts' }), 'the agent reaching into the RIB')
  t.ok(bypass({ file: 'felix/x.ts', line: 1, target: 'bgp/speaker.ts' }), 'felix past bgp/index.ts')
  t.ok(bypass({ file: 'agent/x.ts', line: 1, target: 'config/resources/index.ts' }), 'a sub-folder index is not the folder face')
  t.notOk(bypass({ file: 'agent/x.ts', line: 1, target: 'bgp/index.ts' }), 'the face itself')
  t.notOk(bypass({ file: 'bgp/rib/rib.ts', line: 1, target: 'bgp/codec/nlri.ts' }), 'inside one folder')
  t.notOk(bypass({ file: 'cni/x.ts', line: 1, target: 'net/ip.ts' }), 'an allowed exception')
  t.ok(bypass({ file: 'bgp/rib/rib.ts', line: 1, target: 'net/parse.ts' }), 'net past net/index.ts')
  // Every exception names a module that exists, so a stale entry is noticed.
  for (const path of Object.keys(ALLOWED)) t.ok(sources(path.split('/').slice(0, -1).join('/')).includes(path), `${path} exists`)
  // The multi-line form, and an import() inside a function, are both read.
  const parsed = ts.preProcessFile("import {\n  a,\n} from '../bgp/rib/rib.js'\nasync function f() { await import('../felix/x.js') }\n", true, true)
  t.same(
    parsed.importedFiles.map((f) => f.fileName),
    ['../bgp/rib/rib.js', '../felix/x.js'],
  )
})
