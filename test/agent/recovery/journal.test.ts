// The recovery journal's bytes: each record kind round-trips; a torn last line is dropped and said where; a
// bad line (an unknown version, a missing or unknown field, not JSON, not UTF-8) is an error naming its byte
// offset and field while the lines around it are still read; the file is rewritten with its open records
// and anything unreadable is kept beside it; an earlier agent's per-file layouts and a plugin's owed-release
// notes (old and new) read as the same records.

import t, { type Test } from 'tap'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Journal } from '../../../agent/recovery/journal.js'
import { legacyRecords } from '../../../agent/recovery/legacy.js'
import { type JournalRecord, JournalError, decodeRecord, encodeRecord, openRecords, parseJournal } from '../../../cni/recovery-record.js'
import { oweRelease, spoolDir, takeOwedReleases } from '../../../cni/release-spool.js'

const at = 1_700_000_000_000
const ADD: JournalRecord = { v: 1, op: 'add', id: 'p1-a', at, containerId: 'c1', netns: '/run/netns/p1', ifname: 'eth0', hostVeth: 'pnt0123456789ab', handle: 'net.c1.eth0', owner: 'net.c1.eth0' }
const ASSIGN: JournalRecord = { v: 1, op: 'assign', id: 'assign:42-1', at, handle: 'net.c2.eth0' }
const RELEASE: JournalRecord = { v: 1, op: 'release', id: 'release:net.c3.eth0', at, handle: 'net.c3.eth0', cause: 'del' }
const DONE: JournalRecord = { v: 1, op: 'done', id: 'p1-a', at }

const bytes = (...parts: string[]): Buffer => Buffer.from(parts.join(''))

function dir(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'pinto-journal-'))
  t.teardown(() => rmSync(d, { recursive: true, force: true }))
  return d
}

t.test('each record kind round-trips through its line', async (t) => {
  for (const r of [ADD, { ...ADD, prior: true as const }, ASSIGN, RELEASE, { ...RELEASE, cause: 'plugin-owed' as const, containerId: 'c3', hostVeth: 'pntx' }, DONE]) {
    const line = encodeRecord(r)
    t.ok(line.endsWith('\n') && !line.slice(0, -1).includes('\n'), `${r.op}: one line`)
    t.same(decodeRecord(line.slice(0, -1)), r, `${r.op}: read back equal`)
  }
})

t.test('a torn last line is dropped, and where it began is said', async (t) => {
  const whole = encodeRecord(ADD) + encodeRecord(ASSIGN)
  const cut = encodeRecord(RELEASE).slice(0, 17) // the writer died 17 bytes into the third record
  const p = parseJournal(bytes(whole, cut))
  t.same(p.records.map((r) => r.record), [ADD, ASSIGN], 'the whole lines read')
  t.same(p.records.map((r) => r.offset), [0, Buffer.byteLength(encodeRecord(ADD))], 'each at its byte offset')
  t.same(p.torn, { offset: Buffer.byteLength(whole), length: 17 })
  t.same(p.errors, [], 'a torn tail is no error')
  t.equal(parseJournal(bytes(whole)).torn, undefined, 'a file ending in a newline is whole')
  t.same(parseJournal(Buffer.alloc(0)), { records: [], errors: [], torn: undefined }, 'an empty file holds nothing')
})

t.test('a bad line is an error naming its byte offset and field; the lines around it are read', async (t) => {
  const first = encodeRecord(ADD)
  const cases: { line: string; field: string; problem: RegExp }[] = [
    // a newer agent's record
    { line: '{"v":2,"op":"add","id":"x","at":1,"spin":"up"}', field: 'v', problem: /version 2 is not one this agent reads \(1\)/ },
    // no version at all (an earlier agent's per-file entry, pasted in)
    { line: '{"id":"x","handle":"h"}', field: 'v', problem: /version undefined/ },
    { line: '{"v":1,"op":"unassign","id":"x","at":1}', field: 'op', problem: /"unassign" is not add, assign, release or done/ },
    { line: '{"v":1,"op":"assign","id":"x","at":1}', field: 'handle', problem: /expected a string, got undefined/ },
    { line: '{"v":1,"op":"assign","id":"x","at":1,"handle":""}', field: 'handle', problem: /is empty/ },
    { line: '{"v":1,"op":"release","id":"x","at":1,"handle":"h","cause":"boredom"}', field: 'cause', problem: /"boredom" is not one of del, /},
    { line: '{"v":1,"op":"done","id":"x","at":1,"handle":"h"}', field: 'handle', problem: /not a field of a done record/ },
    { line: '{"v":1,"op":"done","id":"x","at":"yesterday"}', field: 'at', problem: /expected a time in ms/ },
    { line: '{"v":1,"op":"add","id":"x","at":1,"containerId":"c","netns":"","ifname":"eth0","hostVeth":"v","handle":"","owner":"c","prior":false}', field: 'prior', problem: /expected true or nothing/ },
    { line: '{"v":1,"op":"done"', field: 'record', problem: /not JSON/ },
    { line: '[1]', field: 'record', problem: /not a JSON object/ },
  ]
  for (const c of cases) {
    const p = parseJournal(bytes(first, c.line, '\n', encodeRecord(DONE)))
    t.equal(p.errors.length, 1, `${c.field}: one error`)
    const e = p.errors[0]!
    t.ok(e instanceof JournalError)
    t.equal(e.offset, Buffer.byteLength(first), `${c.line}: its byte offset`)
    t.equal(e.field, c.field, `${c.line}: names ${c.field}`)
    t.match(e.problem, c.problem)
    t.match(e.message, new RegExp(`^byte ${Buffer.byteLength(first)}: ${c.field}: `), 'the message leads with both')
    t.same(p.records.map((r) => r.record.op), ['add', 'done'], 'the lines around it still read')
  }
  // Bytes that are not UTF-8 (0xff never starts a character).
  const raw = Buffer.concat([bytes(first), Buffer.from([0x7b, 0xff, 0x7d, 0x0a])])
  const p = parseJournal(raw)
  t.match(p.errors[0], { offset: Buffer.byteLength(first), field: 'record', problem: 'not UTF-8' })
})

t.test('open records: a done closes its id, a later record of an id replaces it', async (t) => {
  const again = { ...RELEASE, at: at + 5 }
  const open = openRecords([ADD, ASSIGN, RELEASE, DONE, again])
  t.same([...open.values()], [ASSIGN, again])
})

t.test('the file: read at load, unreadable lines kept aside, rewritten with the open records, compacted', async (t) => {
  const d = dir(t)
  const file = join(d, 'recovery.journal')
  const left = bytes(encodeRecord(ADD), '{"v":9,"op":"add"}\n', encodeRecord(ASSIGN), encodeRecord(DONE), encodeRecord(RELEASE).slice(0, 30))
  writeFileSync(file, left)
  const j = new Journal(file, 600)
  const before = j.append({ op: 'assign', id: 'assign:early', handle: 'net.early' }) // taken before the load: kept
  t.equal(before.v, 1, 'stamped with the version')
  const loaded = j.load()
  t.same(loaded.open.map((r) => r.id), ['assign:42-1', 'assign:early'], 'the done closed the add; the torn release never began')
  t.match(loaded.errors, [{ offset: Buffer.byteLength(encodeRecord(ADD)), field: 'v' }])
  t.ok(loaded.unreadable !== undefined && readFileSync(loaded.unreadable).equals(left), 'the file as it was, kept beside it')
  t.same(loaded.torn, { offset: left.length - 30, length: 30 })
  t.same(parseJournal(readFileSync(file)).records.map((r) => r.record.id), ['assign:42-1', 'assign:early'], 'rewritten with the open records alone')
  j.close('assign:42-1')
  j.close('assign:never-open') // nothing written for an id not open
  j.append({ op: 'release', id: 'release:h', handle: 'h', cause: 'add-failed' })
  t.same([...openRecords(parseJournal(readFileSync(file)).records.map((r) => r.record)).keys()], ['assign:early', 'release:h'], 'appends and dones land in order')
  for (let i = 0; i < 20; i++) {
    j.append({ op: 'assign', id: `assign:${i}`, handle: `h${i}` })
    j.close(`assign:${i}`)
  }
  t.ok(readFileSync(file).length <= 600 + 200, 'rewritten when past its bound')
  t.same([...openRecords(parseJournal(readFileSync(file)).records.map((r) => r.record)).keys()], ['assign:early', 'release:h'], 'and hold the same open records')
  j.shut()
  const next = new Journal(file).load()
  t.same(next.open.map((r) => r.id), ['assign:early', 'release:h'], 'what stays open is what the next start replays')
  t.same(readdirSync(d).filter((n) => n.endsWith('.tmp')), [], 'no temporary file left')
})

t.test('without a file the records live in memory', async (t) => {
  const j = new Journal(undefined)
  t.equal(j.durable, false)
  j.append(ASSIGN)
  t.same(j.load().open.map((r) => r.id), ['assign:42-1'])
})

t.test("an earlier agent's layouts read as records, then go", async (t) => {
  const d = dir(t)
  mkdirSync(join(d, 'cni-adds'))
  mkdirSync(join(d, 'ipam-assigns'))
  mkdirSync(join(d, 'ipam-releases'))
  writeFileSync(join(d, 'cni-adds', 'r1'), JSON.stringify({ id: 'r1', containerId: 'c1', netns: '/run/netns/p', ifname: 'eth0', hostVeth: 'pntv', handle: 'net.c1', prior: true }))
  writeFileSync(join(d, 'cni-adds', '.r2'), '{"id":') // never whole
  writeFileSync(join(d, 'cni-adds', 'r3'), 'garbage')
  writeFileSync(join(d, 'ipam-assigns', '7-1'), JSON.stringify({ handle: 'net.c2' }))
  writeFileSync(join(d, 'ipam-releases', encodeURIComponent('net.c/3')), '')
  const skipped: unknown[] = []
  const { records, remove } = legacyRecords(d, (_msg, fields) => void skipped.push(fields['file']))
  t.same(records, [
    { op: 'add', id: 'r1', containerId: 'c1', netns: '/run/netns/p', ifname: 'eth0', hostVeth: 'pntv', handle: 'net.c1', owner: 'c1', prior: true },
    { op: 'assign', id: 'assign:legacy-7-1', handle: 'net.c2' },
    { op: 'release', id: 'release:net.c/3', handle: 'net.c/3', cause: 'carried-over' },
  ])
  t.same(skipped, [join(d, 'cni-adds', 'r3')], 'a file it did not write is named')
  remove()
  t.same(readdirSync(d), [], 'the layouts are gone')
  t.same(legacyRecords(d, () => undefined).records, [], 'none left: nothing')
})

t.test("a plugin's owed-release note is one record; an earlier plugin's bare note still reads; a newer one is named", async (t) => {
  const d = dir(t)
  const socket = join(d, 'pinto.sock')
  oweRelease(socket, { handle: 'net.a', containerId: 'a', hostVeth: 'pnta' })
  const note = readFileSync(join(spoolDir(socket), 'net.a'))
  const p = parseJournal(note)
  t.match(p, { errors: [], torn: undefined, records: [{ offset: 0, record: { v: 1, op: 'release', id: 'release:net.a', handle: 'net.a', cause: 'plugin-owed', containerId: 'a', hostVeth: 'pnta' } }] })
  writeFileSync(join(spoolDir(socket), 'net.b'), JSON.stringify({ handle: 'net.b', containerId: 'b', hostVeth: 'pntb' }))
  writeFileSync(join(spoolDir(socket), 'net.c'), '{"v":2,"op":"release","id":"release:net.c"}\n')
  const bad: [string, string][] = []
  const owed = takeOwedReleases(socket, Date.now(), (file, problem) => void bad.push([file, problem]))
  t.same(owed.sort((x, y) => x.handle.localeCompare(y.handle)), [{ handle: 'net.a', containerId: 'a', hostVeth: 'pnta' }, { handle: 'net.b', containerId: 'b', hostVeth: 'pntb' }])
  t.same(bad, [[join(spoolDir(socket), 'net.c'), 'byte 0: v: version 2 is not one this agent reads (1)']])
  t.notOk(existsSync(join(spoolDir(socket), 'net.c')), 'taken like the others')
})
