// The one record of a pod's recovery (agent/recovery/): a pending CNI ADD, IPAM assign or release, and the
// `done` that closes it, one JSON object per line with a version field. Pure: bytes in, records out, with
// each bad line's byte offset and field named. It lives here, below the agent, because the plugin writes
// its owed releases in it without the agent (release-spool.ts), as it speaks the channel's requests.

/** The journal format this code writes and reads. */
export const JOURNAL_VERSION = 1

/** Why a handle's release is pending (for the operator who reads the journal, and the logs). */
export const RELEASE_CAUSES = ['del', 'add-failed', 'add-unanswered', 'assign-unanswered', 'plugin-owed', 'carried-over'] as const
export type ReleaseCause = (typeof RELEASE_CAUSES)[number]

interface Base {
  readonly v: typeof JOURNAL_VERSION
  /**
   * Unique among open records: an ADD's is its CNI channel request id ([A-Za-z0-9-], also the name of its
   * answer); an assign's `assign:<pid>-<n>`; a release's `release:<handle>` (one per handle).
   */
  readonly id: string
  /** When it was written (ms since the epoch). */
  readonly at: number
}

/** A CNI ADD the agent took through its channel; answered once its answer file is renamed into place. */
export interface AddRecord extends Base {
  readonly op: 'add'
  readonly containerId: string
  readonly netns: string
  readonly ifname: string
  /** The host end's name as the ADD computed it. */
  readonly hostVeth: string
  /** The IPAM handle when the ADD allocates through pinto-ipam, else ''. */
  readonly handle: string
  /** The attachment's id, which its host veth records as its ifalias. */
  readonly owner: string
  /** The attachment was wired before this ADD began (a repeat): undoing it undoes nothing. */
  readonly prior?: true
}

/** An assign over the IPAM socket, from the plugin's own ADD; closed just before its answer goes out. */
export interface AssignRecord extends Base {
  readonly op: 'assign'
  readonly handle: string
}

/** A handle to release until the datastore confirms (or a new ADD of it takes it over). */
export interface ReleaseRecord extends Base {
  readonly op: 'release'
  readonly handle: string
  readonly cause: ReleaseCause
  /** Set by the plugin, which computes them: the container and the host veth its ADD would have made. */
  readonly containerId?: string
  readonly hostVeth?: string
}

/** Closes the open record `id`: answered, released, rolled back or taken over. */
export interface DoneRecord extends Base {
  readonly op: 'done'
}

export type JournalRecord = AddRecord | AssignRecord | ReleaseRecord | DoneRecord
export type PendingRecord = Exclude<JournalRecord, DoneRecord>

/** A line of the journal that is not a record this code reads: where, which field, what is wrong. */
export class JournalError extends Error {
  constructor(readonly offset: number, readonly field: string, readonly problem: string) {
    super(`byte ${offset}: ${field}: ${problem}`)
  }
}

/** The id of `handle`'s release record. */
export const releaseId = (handle: string): string => `release:${handle}`

/** One record as a line (JSON, then a newline). */
export function encodeRecord(r: JournalRecord): string {
  return `${JSON.stringify(r)}\n`
}

const FIELDS: Readonly<Record<JournalRecord['op'], { readonly required: readonly string[]; readonly optional: readonly string[] }>> = {
  add: { required: ['containerId', 'netns', 'ifname', 'hostVeth', 'handle', 'owner'], optional: ['prior'] },
  assign: { required: ['handle'], optional: [] },
  release: { required: ['handle', 'cause'], optional: ['containerId', 'hostVeth'] },
  done: { required: [], optional: [] },
}
const COMMON = ['v', 'op', 'id', 'at']
const NON_EMPTY = new Set(['id', 'assign.handle', 'release.handle', 'add.hostVeth', 'add.owner'])

/** The record in `text`, one line without its newline, which starts at byte `offset` of its file. */
export function decodeRecord(text: string, offset = 0): JournalRecord {
  const bad = (field: string, problem: string): never => {
    throw new JournalError(offset, field, problem)
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (err) {
    return bad('record', `not JSON (${(err as Error).message})`)
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return bad('record', 'not a JSON object')
  const o = raw as Record<string, unknown>
  // The version first: a newer agent's record may differ in anything else.
  if (o['v'] !== JOURNAL_VERSION) return bad('v', `version ${JSON.stringify(o['v'])} is not one this agent reads (${JOURNAL_VERSION})`)
  const op = o['op']
  if (typeof op !== 'string' || !Object.hasOwn(FIELDS, op)) return bad('op', `${JSON.stringify(op)} is not add, assign, release or done`)
  const spec = FIELDS[op as JournalRecord['op']]
  for (const k of Object.keys(o)) if (!COMMON.includes(k) && !spec.required.includes(k) && !spec.optional.includes(k)) bad(k, `not a field of a ${op} record`)
  if (typeof o['at'] !== 'number' || !Number.isFinite(o['at'])) bad('at', `expected a time in ms, got ${JSON.stringify(o['at'])}`)
  for (const k of ['id', ...spec.required, ...spec.optional.filter((f) => f !== 'prior' && o[f] !== undefined)]) {
    const v = o[k]
    if (typeof v !== 'string') bad(k, `expected a string, got ${JSON.stringify(v)}`)
    if (v === '' && (NON_EMPTY.has(k) || NON_EMPTY.has(`${op}.${k}`))) bad(k, 'is empty')
  }
  if (o['prior'] !== undefined && o['prior'] !== true) bad('prior', `expected true or nothing, got ${JSON.stringify(o['prior'])}`)
  if (op === 'release' && !(RELEASE_CAUSES as readonly unknown[]).includes(o['cause'])) bad('cause', `${JSON.stringify(o['cause'])} is not one of ${RELEASE_CAUSES.join(', ')}`)
  return o as unknown as JournalRecord
}

export interface ParsedJournal {
  /** Each record read, with the byte offset of its line. */
  readonly records: readonly { readonly record: JournalRecord; readonly offset: number }[]
  /** Lines that are not records (each kept by the caller, not replayed). */
  readonly errors: readonly JournalError[]
  /**
   * A last line without its newline: a write cut short. Its record was written before its work began, so
   * the work never began; it is dropped. Undefined when the file ends with a whole line.
   */
  readonly torn: { readonly offset: number; readonly length: number } | undefined
}

const NL = 0x0a
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Every line of a journal file's bytes; a bad line is reported and the rest still read. */
export function parseJournal(bytes: Uint8Array): ParsedJournal {
  const records: { record: JournalRecord; offset: number }[] = []
  const errors: JournalError[] = []
  let start = 0
  while (start < bytes.length) {
    const nl = bytes.indexOf(NL, start)
    if (nl < 0) return { records, errors, torn: { offset: start, length: bytes.length - start } }
    const line = bytes.subarray(start, nl)
    if (line.length > 0) {
      try {
        let text: string
        try {
          text = utf8.decode(line)
        } catch {
          throw new JournalError(start, 'record', 'not UTF-8')
        }
        records.push({ record: decodeRecord(text, start), offset: start })
      } catch (err) {
        if (!(err instanceof JournalError)) throw err
        errors.push(err)
      }
    }
    start = nl + 1
  }
  return { records, errors, torn: undefined }
}

/**
 * The records still open after `records` in order: each pending record by id (a later one of the same id
 * replaces it), less those a `done` closed.
 */
export function openRecords(records: Iterable<JournalRecord>): Map<string, PendingRecord> {
  const open = new Map<string, PendingRecord>()
  for (const r of records) {
    if (r.op === 'done') open.delete(r.id)
    else open.set(r.id, r)
  }
  return open
}
