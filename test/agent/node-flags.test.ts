// pinto-node starts with the same V8 flags however it is started: its #! line, the image's wrapper, and
// every harness that spawns it (from AGENT_NODE_FLAGS), so a test or bench measures the program as it runs.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { AGENT_NODE_FLAGS } from '../../agent/node-flags.js'

const root = (rel: string): string => fileURLToPath(new URL(`../../../${rel}`, import.meta.url))

t.test('the #! line of bin/pinto-node.js carries AGENT_NODE_FLAGS', async (t) => {
  const first = readFileSync(root('bin/pinto-node.js'), 'utf8').split('\n', 1)[0]!
  t.equal(first, `#!/usr/bin/env -S node ${AGENT_NODE_FLAGS.join(' ')}`)
})

t.test("the image's pinto-node wrapper carries AGENT_NODE_FLAGS", async (t) => {
  const script = readFileSync(root('scripts/image.js'), 'utf8')
  t.ok(script.includes(`exec /usr/local/bin/node ${AGENT_NODE_FLAGS.join(' ')} \${APP}/bin/pinto-node.js`), 'scripts/image.js writes the flags into /usr/local/bin/pinto-node')
})
