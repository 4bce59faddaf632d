// Calico 3.32's own example documents (test/fixtures/calico-3.32, verbatim from its reference pages)
// through the real parser and through `pintoctl apply`: each applies unchanged, or is refused naming
// only fields that docs/reference/resources.md lists as refused for that kind.
import t from 'tap'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { tryParseResources } from '../../config/resources/index.js'
import { runPintoctl } from '../agent/pintoctl/run.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const fixtures = join(root, 'test/fixtures/calico-3.32')

/** What each example does in pinto: applies, or is refused at these field paths. */
const expected: Record<string, { kinds: string[]; refused?: string[] }> = {
  'bgpconfig-1.yaml': { kinds: ['BGPConfiguration'] },
  'bgpfilter-1.yaml': { kinds: ['BGPFilter'] },
  'bgppeer-1.yaml': { kinds: ['BGPPeer'] },
  // Its Role, RoleBinding and Secret are for kubectl; the two BGPPeers are Calico's.
  'bgppeer-2.yaml': { kinds: ['BGPPeer', 'BGPPeer'] },
  'ipamconfig-1.yaml': { kinds: ['IPAMConfig'], refused: ['spec.kubeVirtVMAddressPersistence'] },
  'ippool-1.yaml': { kinds: ['IPPool'] },
  'node-1.yaml': { kinds: ['Node'] },
}

/** The projectcalico.org/v3 documents of a file, each as its own unchanged text. */
function calicoDocuments(text: string): string[] {
  return text.split(/^---[ \t]*$/m).filter((d) => /^apiVersion: projectcalico\.org\/v3$/m.test(d))
}

/** docs/reference/resources.md: per kind heading, the field paths of the rows whose state is "refused". */
function refusedFields(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>()
  let kind = ''
  for (const line of readFileSync(join(root, 'docs/reference/resources.md'), 'utf8').split('\n')) {
    const heading = /^## (\S+)/.exec(line)
    if (heading !== null) kind = heading[1] ?? ''
    const row = /^\| (.+?) \| refused \|/.exec(line)
    if (row === null) continue
    const set = out.get(kind) ?? new Set<string>()
    for (const m of (row[1] ?? '').matchAll(/`([^`]+)`/g)) set.add(m[1] ?? '')
    out.set(kind, set)
  }
  return out
}

const KIND_HEADING: Record<string, string> = { IPAMConfig: 'IPAMConfiguration', IPAMConfiguration: 'IPAMConfiguration' }

t.test('every example file is known to this test', async (t) => {
  t.same(readdirSync(fixtures).sort(), Object.keys(expected).sort())
})

t.test("each of Calico's examples applies unchanged, or is refused naming a field the table lists as refused", async (t) => {
  const refused = refusedFields()
  for (const [file, want] of Object.entries(expected)) {
    const docs = calicoDocuments(readFileSync(join(fixtures, file), 'utf8'))
    t.equal(docs.length, want.kinds.length, `${file}: ${want.kinds.length} Calico document(s)`)
    const paths: string[] = []
    const kinds: string[] = []
    for (const doc of docs) {
      const { resources, errors } = tryParseResources(doc, file)
      const kind = /^kind: (\S+)$/m.exec(doc)?.[1] ?? ''
      kinds.push(...resources.map((r) => r.kind))
      if (errors.length > 0) kinds.push(kind === 'IPAMConfiguration' ? 'IPAMConfig' : kind)
      for (const e of errors) {
        const path = e.path.replace(/^documents\[\d+\]\./, '')
        paths.push(path)
        const listed = refused.get(KIND_HEADING[kind] ?? kind) ?? new Set()
        t.ok(listed.has(path), `${file}: ${path} (${e.reason}) is listed as refused for ${kind} in docs/reference/resources.md`)
      }
    }
    t.same(kinds, want.kinds, `${file}: the documents read`)
    t.same(paths, want.refused ?? [], `${file}: ${want.refused === undefined ? 'applies unchanged' : 'refused at exactly these fields'}`)
  }
})

t.test('pintoctl apply takes the examples that apply, and names the refused field', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-examples-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = { PINTO_DATASTORE: join(dir, 'store') }
  for (const [file, want] of Object.entries(expected)) {
    const docs = calicoDocuments(readFileSync(join(fixtures, file), 'utf8'))
    const path = join(dir, file)
    writeFileSync(path, docs.join('---\n'))
    const r = await runPintoctl(['apply', '-f', path], { env })
    if (want.refused === undefined) {
      t.equal(r.status, 0, `${file}: ${r.stderr}`)
      t.match(r.stdout, /^Successfully applied \d+ '\w+' resource\(s\)\n$/, `${file}: ${r.stdout.trim()}`)
    } else {
      t.not(r.status, 0, `${file}: refused`)
      for (const field of want.refused) t.match(r.stderr, field, `${file}: the error names ${field}`)
    }
  }
  const got = await runPintoctl(['get', 'bgpfilter', 'my-filter', '-o', 'json'], { env })
  t.match(JSON.parse(got.stdout), { kind: 'BGPFilter', spec: { importV6: [{ action: 'Accept', matchOperator: 'Equal', cidr: '5000::0/64' }, { action: 'Reject' }] } }, 'stored as written')
})
