// Imported first by the single executable's entry (cni/sea-main.ts), before any other module loads: when
// the runtime's environment carries variables Node.js reads for itself, runs the same program again
// without them. It owns only that re-exec; which variables count is sea-role.ts's.
import { nodeVariables } from './sea-role.js'

// The sea config ignores NODE_OPTIONS (execArgvExtension "none"), but Node still honours other NODE_*
// variables: some at start (NODE_COMPILE_CACHE makes its directory), most later, as modules load or at
// exit (NODE_DEBUG, NODE_V8_COVERAGE, NODE_REDIRECT_WARNINGS, NODE_EXTRA_CA_CERTS). execve replaces this
// process before any of that, so nothing of the node's environment changes what the plugin does or
// writes; a runtime's usual environment has none of them and pays nothing.
const inherited = nodeVariables(process.env)
if (inherited.length > 0) {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !inherited.includes(k)) env[k] = v
  const proc = process as unknown as { execve(file: string, args: readonly string[], env: Record<string, string>): never }
  proc.execve(process.execPath, [process.argv0, ...process.argv.slice(2)], env)
}
