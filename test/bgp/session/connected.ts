// Whether a TCP connect completes within a deadline: a SYN the kernel drops (GTSM) or a segment whose
// TCP-MD5 digest does not match leaves it pending, never failing on its own.
import type net from 'node:net'

export function connected(socket: net.Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy()
      resolve(false)
    }, ms)
    socket.once('connect', () => {
      clearTimeout(timer)
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => {
      clearTimeout(timer)
      resolve(false)
    })
  })
}
