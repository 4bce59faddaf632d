// One pod's ADD and DEL made whole across a killed agent and an unreachable datastore: the journal, the
// release queue and the channel's ADDs composed behind the calls the IPAM service and the CNI channel make
// at each step, and the replay at start. It decides nothing about allocation; releases go through the
// function the IPAM service hands in.

import { join } from 'node:path'
import { channelPaths, takeOwedReleases } from '../../cni/index.js'
import { type AddEntry, CniAdds } from './cni-adds.js'
import { Journal } from './journal.js'
import { legacyRecords } from './legacy.js'
import type { ReleaseCause } from '../../cni/index.js'
import { ReleaseQueue } from './release-queue.js'

/** The journal's file under the agent's state dir. */
export const JOURNAL_FILE = 'recovery.journal'

export interface PodRecoveryOptions {
  /** The agent's state dir (PINTO_STATE_DIR); without one the journal is kept in memory and nothing survives. */
  readonly stateDir?: string | undefined
  /** The IPAM socket: the plugins' owed releases and the channel's answers are kept beside it. */
  readonly socket: string
  /** Releases `handle` (serialised with the service's other requests); throws while the datastore is away. */
  readonly release: (handle: string) => Promise<void>
  /** Whether a live wiring on this node holds `handle` (default: a link's ifalias records its attachment). */
  readonly held?: ((handle: string) => Promise<boolean>) | undefined
  /** Called when a release that had failed goes through: the datastore is back. */
  readonly onDatastoreBack?: (() => void) | undefined
  readonly log?: ((msg: string, fields: Record<string, unknown>) => void) | undefined
}

export class PodRecovery {
  readonly journal: Journal
  readonly releases: ReleaseQueue
  readonly adds: CniAdds
  private readonly log: (msg: string, fields: Record<string, unknown>) => void
  private seq = 0

  constructor(private readonly options: PodRecoveryOptions) {
    this.log = options.log ?? (() => undefined)
    this.journal = new Journal(options.stateDir === undefined ? undefined : join(options.stateDir, JOURNAL_FILE))
    this.releases = new ReleaseQueue({
      journal: this.journal,
      release: options.release,
      ...(options.held !== undefined ? { held: options.held } : {}),
      ...(options.onDatastoreBack !== undefined ? { onRecovered: options.onDatastoreBack } : {}),
      log: this.log,
    })
    this.adds = new CniAdds(this.journal, channelPaths(options.socket).replies, this.log)
  }

  /** ADDs a previous run took and never answered, rolled back at start. */
  get rolledBack(): number {
    return this.adds.rolledBack
  }

  /** Handles queued for release until the datastore confirms. */
  get pendingReleases(): number {
    return this.releases.size
  }

  /**
   * At start, before the socket and the channel serve: what an earlier agent's layouts hold, then what the
   * journal holds open, replayed: an unanswered ADD undone, an unanswered assign and every pending
   * release queued; then the releases the plugins noted as owed. The queue starts with them.
   */
  async start(): Promise<void> {
    const { stateDir } = this.options
    const legacy = stateDir === undefined ? undefined : legacyRecords(stateDir, this.log)
    for (const r of legacy?.records ?? []) this.journal.append(r)
    const loaded = this.journal.load()
    legacy?.remove()
    for (const e of loaded.errors) this.log('recovery journal: a line is not a record this agent reads; not replayed, kept aside', { offset: e.offset, field: e.field, problem: e.problem, keptIn: loaded.unreadable })
    if (loaded.torn !== undefined) this.log('recovery journal: its last record was cut short; its work never began', loaded.torn)
    for (const r of loaded.open) {
      if (r.op !== 'add') continue
      try {
        await this.adds.replay(r, (handle) => this.releases.add(handle, 'add-unanswered'))
      } catch (err) {
        // Left open, with its placeholder: the next start tries again; the node repair covers it meanwhile.
        this.log('rolling back a CNI ADD the last run never answered failed; kept for the next start', { containerId: r.containerId, hostVeth: r.hostVeth, err: (err as Error).message })
      }
    }
    for (const r of loaded.open) {
      if (r.op === 'assign') {
        this.log('releasing an IPAM assign the last run took and never answered', { handle: r.handle })
        this.releases.add(r.handle, 'assign-unanswered')
        this.journal.close(r.id)
      } else if (r.op === 'release') this.releases.add(r.handle, r.cause)
    }
    const foreign = (file: string, problem: string): void => this.log('a file beside the socket is not an owed release; removed', { file, problem })
    for (const r of takeOwedReleases(this.options.socket, Date.now(), foreign)) {
      this.log('releasing an IPAM assign a plugin never had answered', { handle: r.handle })
      this.releases.add(r.handle, 'plugin-owed', { containerId: r.containerId, hostVeth: r.hostVeth })
    }
    this.releases.start()
  }

  /** Stops retrying releases, once the attempt under way is over; what is open stays for the next start. */
  stopRetrying(): Promise<void> {
    return this.releases.close()
  }

  /** Stops writing the journal (after the service's last request). */
  shut(): void {
    this.journal.shut()
  }

  /** An assign over the socket, recorded before its work starts; returns the id its answer closes. */
  assignBegun(handle: string): string {
    const id = `assign:${process.pid}-${++this.seq}`
    this.journal.append({ op: 'assign', id, handle })
    return id
  }

  /** Closes the assign's record, just before its answer goes: once the plugin may have it, nothing rolls it back. */
  assignAnswered(id: string): void {
    this.journal.close(id)
  }

  /** A new ADD of `handle` takes it over: a release pending for it would now free the new pod's addresses. */
  takenOver(handle: string): void {
    this.releases.drop(handle)
  }

  /** A DEL's release, recorded before its datastore write. */
  releasing(handle: string): void {
    this.releases.record(handle, 'del')
  }

  /** The release of `handle` is made (or will never be: its records are not pinto's to free). */
  released(handle: string): void {
    this.releases.drop(handle)
  }

  /** Whether `handle`'s release is still wanted (a new ADD has not taken it over meanwhile). */
  releaseWanted(handle: string): boolean {
    return this.releases.has(handle)
  }

  /** Releases `handle` until the datastore confirms, once no live wiring holds it. */
  releaseLater(handle: string, cause: ReleaseCause): void {
    this.releases.add(handle, cause)
  }

  /** A CNI channel ADD, recorded before its work starts. */
  addBegun(entry: AddEntry): void {
    this.adds.begin(entry)
  }

  /** The ADD's answer is in place (or the ADD was undone). */
  addAnswered(id: string): void {
    this.adds.end(id)
  }

  /** Undoes an ADD whose answer could not be written: the plugin gives up and the runtime asks again. */
  addUnanswered(entry: AddEntry): Promise<void> {
    return this.adds.rollBack(entry, (handle) => this.releases.add(handle, 'add-unanswered'))
  }
}
