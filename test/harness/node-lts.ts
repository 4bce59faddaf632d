// The Node.js pinto ships (scripts/node-lts.js fetches it into .cache/ and prints its path), for tests
// and benches that run the product under it rather than under the Node.js running them.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const SCRIPT = fileURLToPath(new URL('../../../scripts/node-lts.js', import.meta.url))

/** Its absolute path, fetched first when it is not cached; undefined, with the reason, when it cannot be had. */
export function nodeLts(): { path: string } | { reason: string } {
  try {
    return { path: execFileSync(process.execPath, [SCRIPT], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim() }
  } catch (err) {
    return { reason: `scripts/node-lts.js failed: ${String((err as { stderr?: string }).stderr ?? (err as Error).message).trim()}` }
  }
}
