// The short way for ADD and DEL with pinto-ipam: the plugin hands the whole of it to pinto-node, which
// allocates (or releases) and wires (or unwires) with warm code and its IPAM in-process, and answers. The plugin then needs neither
// node:net nor node:child_process, whose loading, and the spawning of two `ip`, a cold Node.js process
// would pay on every pod. The channel is a FIFO beside the agent's socket, written with one write(2) of at
// most PIPE_BUF bytes (so requests from concurrent plugins never interleave), and a directory where the
// agent renames each answer into place under the request's id, which the plugin looks for.
// Anything the channel cannot carry (no FIFO, a config over PIPE_BUF, a full FIFO, a netns the agent
// cannot see) is left to the plugin, which does it itself; a FIFO nobody reads means the agent is down.

import { type FSWatcher, closeSync, constants, fstatSync, openSync, readFileSync, rmSync, watch, writeSync } from 'node:fs'
import type { Invocation } from './pinto-plugin.js'
import type { CniResult } from './result.js'
import { type CniEnv, CniError, ERR } from './spec.js'

/** Linux writes this many bytes to a pipe atomically. */
export const PIPE_BUF = 4096

/** How long the plugin waits for the agent's answer, as for the IPAM service. */
const TIMEOUT_MS = 30_000

export function channelPaths(socket: string): { readonly requests: string; readonly replies: string } {
  return { requests: `${socket}.requests`, replies: `${socket}.replies` }
}

/** One ADD or DEL, as one line on the FIFO. */
export interface ChannelRequest {
  readonly v: 1
  readonly command: 'ADD' | 'DEL'
  /** Names the answer's file: [A-Za-z0-9-], unique among live plugins. */
  readonly id: string
  /** The plugin's process, whose network namespace the host side belongs to. */
  readonly pid: number
  readonly env: Pick<CniEnv, 'containerId' | 'netns' | 'ifname' | 'args' | 'path'>
  /** The network config as the runtime gave it. */
  readonly stdin: string
}

export type ChannelReply =
  /** Done; an ADD's result (a DEL has none). */
  | { readonly ok: true; readonly result?: CniResult }
  | { readonly ok: false; readonly code: number; readonly msg: string; readonly details: string }
  /** The agent cannot do this one (and did nothing): the plugin does it. */
  | { readonly fallback: string }

export const REQUEST_ID = /^[A-Za-z0-9-]{1,64}$/

/** The ADD done by pinto-node, or undefined when the plugin should do it itself. */
export async function addThroughAgent(inv: Invocation): Promise<CniResult | undefined> {
  const done = await throughAgent(inv, 'ADD')
  return done === undefined ? undefined : done.result
}

/** Whether pinto-node did the DEL; false when the plugin should do it itself. */
export async function delThroughAgent(inv: Invocation): Promise<boolean> {
  return (await throughAgent(inv, 'DEL')) !== undefined
}

async function throughAgent(inv: Invocation, command: 'ADD' | 'DEL'): Promise<{ result?: CniResult } | undefined> {
  const { requests, replies } = channelPaths(inv.conf.ipam?.socket ?? inv.conf.socket)
  const id = `${process.pid}-${Date.now().toString(36)}-${process.hrtime()[1].toString(36)}`
  const { containerId, netns, ifname, args, path } = inv.env
  const request: ChannelRequest = { v: 1, command, id, pid: process.pid, env: { containerId, netns, ifname, args, path }, stdin: inv.stdin }
  const line = Buffer.from(JSON.stringify(request) + '\n')
  if (line.length > PIPE_BUF) return undefined
  let fd: number
  try {
    fd = openSync(requests, constants.O_WRONLY | constants.O_NONBLOCK)
  } catch (err) {
    // With the agent down, ADD can do nothing, while DEL still removes the veth before it reports the IPAM error.
    if ((err as NodeJS.ErrnoException).code === 'ENXIO' && command === 'ADD') {
      throw new CniError(ERR.tryAgainLater, `pinto-node is not running: nothing reads its CNI channel ${requests}`, 'start pinto-node on this node, or set "socket" in the network config')
    }
    return undefined
  }
  let waiting: Waiting | undefined
  try {
    if (!fstatSync(fd).isFIFO()) return undefined
    waiting = awaitReply(replies, id, requests, command)
    // One write of at most PIPE_BUF bytes: all of it or, with the FIFO full (EAGAIN), none.
    writeSync(fd, line)
  } catch {
    waiting?.cancel()
    return undefined
  } finally {
    closeSync(fd)
  }
  const reply = await waiting.answer
  if ('fallback' in reply) return undefined
  if (reply.ok) return reply
  throw new CniError(reply.code, reply.msg, reply.details)
}

/** Whether the FIFO still has a reader: opening it for writing without blocking fails with ENXIO when not. */
function readerLeft(fifo: string): boolean {
  try {
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENXIO' && (err as NodeJS.ErrnoException).code !== 'ENOENT'
  }
}

interface Waiting {
  readonly answer: Promise<ChannelReply>
  /** Stops waiting, for a request that never went out. */
  cancel(): void
}

/** Looked for every millisecond this long; an answer later than that is waited for through inotify. */
const POLL_MS = 20

/** While watching, looked for this often anyway: the agent gone, the deadline, an event missed. */
const BACKSTOP_MS = 250

/**
 * The answer renamed into `dir` under `id`: looked for every millisecond at first, which is cheapest when the
 * agent answers at once (an inotify watch costs a cold process its set-up and, at exit, the kernel's wait for
 * its teardown); past POLL_MS through an inotify watch of `dir`, since each wake-up of a process that polls
 * costs it CPU, and in a burst of pod starts the answers are seconds away and the CPU is the node's.
 */
function awaitReply(dir: string, id: string, requests: string, command: string): Waiting {
  const file = `${dir}/${id}`
  const started = Date.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  let watcher: FSWatcher | undefined
  const stop = (): void => {
    clearTimeout(timer)
    watcher?.close()
    watcher = undefined
  }
  const answer = new Promise<ChannelReply>((resolve, reject) => {
    let settled = false
    const settle = (fn: () => void): void => {
      settled = true
      stop()
      fn()
    }
    const look = (): void => {
      if (settled) return
      clearTimeout(timer)
      let text: string
      try {
        text = readFileSync(file, 'utf8')
      } catch (err) {
        const waited = Date.now() - started
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') settle(() => reject(new CniError(ERR.io, `reading pinto-node's answer ${file}: ${(err as Error).message}`)))
        else if (waited > TIMEOUT_MS) settle(() => reject(new CniError(ERR.tryAgainLater, `pinto-node took the ${command} but did not answer within ${TIMEOUT_MS / 1000} s`)))
        else if (waited > 1000 && !readerLeft(requests)) settle(() => reject(new CniError(ERR.tryAgainLater, `pinto-node stopped before answering the ${command} (nothing reads ${requests} any more)`)))
        else if (waited < POLL_MS || !watching()) timer = setTimeout(look, waited < POLL_MS ? 1 : waited < 1000 ? 5 : 50)
        else timer = setTimeout(look, BACKSTOP_MS)
        return
      }
      settle(() => {
        rmSync(file, { force: true })
        try {
          resolve(JSON.parse(text) as ChannelReply)
        } catch {
          reject(new CniError(ERR.io, `pinto-node's answer ${file} is not JSON`, text.slice(0, 200)))
        }
      })
    }
    /** The watch, set up on first need; false where inotify cannot serve (out of watches, say): polled then. */
    let failed = false
    const watching = (): boolean => {
      if (watcher !== undefined) return true
      if (failed) return false
      try {
        watcher = watch(dir, { persistent: true }, (_event, name) => {
          if (name === id) look()
        })
        watcher.on('error', () => undefined)
      } catch {
        failed = true
        return false
      }
      // Renamed in before the watch began: no event will tell.
      setImmediate(look)
      return true
    }
    timer = setTimeout(look, 1)
  })
  return { answer, cancel: stop }
}
