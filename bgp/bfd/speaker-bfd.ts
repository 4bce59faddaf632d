// The speaker's BFD: the sessions its peers ask for, kept in step with them and coupled to the speaker's
// peers, so BFD Down stops the BGP session (RFC 9384's Cease) and BFD Up lets it run again. Owns no
// protocol logic (service.ts and fsm.ts have it) and decides nothing about BGP beyond that coupling.

import type { Logger } from 'pino'
import type { BgpSpeaker } from '../speaker.js'
import { bgpVerdict } from './couple.js'
import { BfdService } from './service.js'
import type { BfdSessionSpec, BfdSessionStatus } from './session.js'

export class SpeakerBfd {
  private readonly service: BfdService
  /** Sessions whose BFD went from Up to Down and has not come back: their BGP peers are held down. */
  private readonly failed = new Map<string, string>()

  constructor(
    private readonly speaker: BgpSpeaker,
    private readonly log: Logger,
    port?: number,
  ) {
    this.service = new BfdService({ logger: log, ...(port !== undefined ? { port } : {}) })
    this.service.onChange((status, change) => {
      const verdict = bgpVerdict(change)
      const peer = this.speaker.peer(status.name)
      if (verdict === 'down') {
        this.failed.set(status.name, change.reason)
        peer?.bfdDown(change.reason)
      } else if (verdict === 'up') {
        this.failed.delete(status.name)
        peer?.bfdUp()
      }
    })
  }

  /**
   * Makes the BFD sessions `specs` (each named after its BGP peer). Called after the speaker's peers were
   * set: a peer the speaker made anew while its BFD is down is held down again.
   */
  async sync(specs: readonly BfdSessionSpec[]): Promise<void> {
    const wanted = new Set(specs.map((s) => s.name))
    for (const name of [...this.failed.keys()]) {
      if (!wanted.has(name)) {
        this.failed.delete(name)
        this.speaker.peer(name)?.bfdUp()
      }
    }
    const summary = await this.service.setSessions(specs)
    if (summary.added.length + summary.removed.length + summary.updated.length > 0) this.log.info(summary, 'BFD sessions updated')
    for (const [name, reason] of this.failed) this.speaker.peer(name)?.bfdDown(reason)
  }

  sessions(): readonly BfdSessionStatus[] {
    return this.service.status()
  }

  get discarded(): number {
    return this.service.counters.discarded
  }

  close(): Promise<void> {
    return this.service.close()
  }
}
