// Reads all of standard input synchronously. A runtime (or a test) may hand a plugin a non-blocking pipe
// whose writer has not written yet: read(2) then fails with EAGAIN, which readFileSync(0) does not retry.

import { readSync } from 'node:fs'

const pause = new Int32Array(new SharedArrayBuffer(4))

export function readStdinSync(): string {
  const chunks: Buffer[] = []
  const buf = Buffer.alloc(65536)
  for (;;) {
    let n: number
    try {
      n = readSync(0, buf, 0, buf.length, null)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'EAGAIN') {
        Atomics.wait(pause, 0, 0, 1)
        continue
      }
      if (code === 'EOF') break
      throw err
    }
    if (n === 0) break
    chunks.push(Buffer.from(buf.subarray(0, n)))
  }
  return Buffer.concat(chunks).toString('utf8')
}
