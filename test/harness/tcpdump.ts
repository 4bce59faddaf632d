// Runs tcpdump on a node's interface inside its namespace and reads the growing capture back through the pure
// pcap reader, so a test can wait on "the capture now contains X" instead of sleeping. Stops tcpdump by PID.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { NetNode, Topology } from './netns.js'
import { parsePcap, reassemble, type TcpConnection } from './pcap.js'
import { stopPid } from './pid.js'
import { waitFor } from './wait.js'

export interface Capture {
  readonly file: string
  /** The connections captured so far (tolerates a half-written last record). */
  connections(): Promise<TcpConnection[]>
  /** Stops tcpdump (it flushes on SIGTERM) and returns the final connections. */
  stop(): Promise<TcpConnection[]>
}

export async function startCapture(topo: Topology, node: NetNode, label: string, filter = 'tcp port 179'): Promise<Capture> {
  const dir = await topo.tempDir(`pcap-${label}`)
  const file = join(dir, `${label}.pcap`)
  let stderr = ''
  // --immediate-mode: hand each packet over at once; otherwise libpcap's ring holds packets up to a block
  // timeout and SIGTERM drops what is still there. -U: write each packet as it arrives, so the file can be
  // polled; -p: no promiscuous mode, so frames the
  // bridge floods to this port for other nodes are not recorded; -s 0: whole packets.
  const child = topo.spawn(node.ns, 'tcpdump', ['-i', node.ifname, '--immediate-mode', '-B', '8192', '-p', '-s', '0', '-U', '-n', '-w', file, ...filter.split(' ')], { buffer: false })
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString()
  })
  await waitFor(() => stderr.includes('listening on') || child.exitCode !== null, { timeoutMs: 5000, what: `tcpdump on ${node.name} to listen` })
  if (child.exitCode !== null) throw new Error(`tcpdump in ${node.name} exited: ${stderr.trim()}`)
  const pid = child.pid!
  const connections = async (): Promise<TcpConnection[]> => reassemble(parsePcap(await readFile(file)))
  return {
    file,
    connections,
    async stop() {
      await stopPid(pid)
      await child
      return connections()
    },
  }
}
