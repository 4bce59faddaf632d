// Reaching a demo node's status page from the machine's own browser: a listener on the host's loopback
// whose every connection is piped, by a small Node.js process run under `ip netns exec`, to the node's
// API on 127.0.0.1 inside its namespace. It forwards bytes only and binds nothing but loopback.

import { spawn } from 'node:child_process'
import { createServer, type AddressInfo, type Socket } from 'node:net'

/** Runs inside the namespace: stdin/stdout <-> TCP 127.0.0.1:PORT. */
const PIPE = "const s=require('net').connect(+process.argv[1],'127.0.0.1');process.stdin.pipe(s);s.pipe(process.stdout);s.on('error',()=>process.exit(1))"

export interface Forward {
  /** `http://127.0.0.1:PORT/` on the host. */
  readonly url: string
  close(): Promise<void>
}

/** Forwards host 127.0.0.1:`hostPort` (0 or a taken port: any free one) to 127.0.0.1:`port` in `ns`. */
export async function forwardIntoNamespace(ns: string, port: number, hostPort: number): Promise<Forward> {
  const children = new Set<ReturnType<typeof spawn>>()
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', PIPE, String(port)], { stdio: ['pipe', 'pipe', 'ignore'] })
    children.add(child)
    socket.pipe(child.stdin)
    child.stdout.pipe(socket)
    child.stdin.on('error', () => socket.destroy())
    socket.on('error', () => child.kill())
    child.on('exit', () => {
      children.delete(child)
      socket.end()
    })
  })
  const listen = (p: number): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen({ host: '127.0.0.1', port: p }, () => {
        server.off('error', reject)
        resolve()
      })
    })
  await listen(hostPort).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EADDRINUSE' || hostPort === 0) throw err
    return listen(0)
  })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close() {
      for (const c of children) c.kill()
      for (const s of sockets) s.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}
