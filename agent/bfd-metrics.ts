// pinto-node's BFD metrics, read from the sessions when Prometheus scrapes (prom-client `collect`):
// state per session, the intervals and detection time in force, packets and Up transitions. No timers.

import { Counter, Gauge, type Registry } from 'prom-client'
import type { BfdSessionStatus } from '../bgp/index.js'

const STATES = ['AdminDown', 'Down', 'Init', 'Up'] as const

export function registerBfdMetrics(registry: Registry, sessions: () => readonly BfdSessionStatus[]): void {
  if (registry.getSingleMetric('pinto_bfd_session_state') !== undefined) return
  const registers = [registry]
  const labelNames = ['peer', 'address'] as const
  const labels = (s: BfdSessionStatus) => ({ peer: s.name, address: s.peerAddress })
  new Gauge({
    name: 'pinto_bfd_session_state',
    help: 'BFD session state per BGP peer: 1 for the current state, 0 for the others',
    labelNames: [...labelNames, 'state'],
    registers,
    collect() {
      this.reset()
      for (const s of sessions()) for (const st of STATES) this.set({ ...labels(s), state: st }, s.state === st ? 1 : 0)
    },
  })
  const gauge = (name: string, help: string, value: (s: BfdSessionStatus) => number): void => {
    new Gauge({
      name, help, labelNames, registers,
      collect() {
        this.reset()
        for (const s of sessions()) this.set(labels(s), value(s))
      },
    })
  }
  gauge('pinto_bfd_detect_time_seconds', 'BFD detection time in force (remote multiplier × agreed remote interval)', (s) => s.detectTimeMs / 1000)
  gauge('pinto_bfd_tx_interval_seconds', 'BFD periodic transmit interval in force, before jitter', (s) => s.txIntervalMs / 1000)
  const counter = (name: string, help: string, value: (s: BfdSessionStatus) => number): void => {
    new Counter({
      name, help, labelNames, registers,
      collect() {
        this.reset()
        for (const s of sessions()) this.inc(labels(s), value(s))
      },
    })
  }
  counter('pinto_bfd_packets_sent_total', 'BFD Control packets sent', (s) => s.packetsSent)
  counter('pinto_bfd_packets_received_total', 'BFD Control packets received and accepted by the session', (s) => s.packetsReceived)
  counter('pinto_bfd_up_transitions_total', 'Times the BFD session came Up', (s) => s.upTransitions)
}
