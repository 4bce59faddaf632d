// pinto-node's BFD: the sessions its desired BGP peers ask for (the pinto.dev/bfd annotation), kept in
// step with them, coupled to the speaker's peers so BFD Down stops the BGP session and BFD Up lets it
// run. Owns no protocol logic (bgp/bfd/ has it) and no BGP decisions beyond that coupling.

import type { Logger } from 'pino'
import { BfdService } from '../bgp/bfd/service.js'
import { bgpVerdict } from '../bgp/bfd/couple.js'
import type { BfdSessionSpec, BfdSessionStatus } from '../bgp/bfd/session.js'
import type { BgpSpeaker } from '../bgp/speaker.js'
import type { DesiredPeer } from './bgp-peers.js'

export class NodeBfd {
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
   * Makes the BFD sessions those the peers ask for. Called after the speaker's peers were set: a peer
   * the speaker made anew while its BFD is down is held down again.
   */
  async sync(peers: readonly DesiredPeer[], nodeAddress: { v4?: string; v6?: string }): Promise<void> {
    const specs: BfdSessionSpec[] = []
    for (const p of peers) {
      if (p.bfd === undefined) continue
      const local = p.localAddress ?? (p.family === 'ipv6' ? nodeAddress.v6 : nodeAddress.v4)
      if (local === undefined) {
        this.log.warn({ peer: p.name }, `BFD left out: this node has no ${p.family} address to send from`)
        continue
      }
      specs.push({ name: p.name, peerAddress: p.address, localAddress: local, family: p.family, params: p.bfd })
    }
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
