// Entry of the single executable that serves both plugins (bundled to dist/bundle/pinto-sea.cjs, built
// into dist/sea/pinto by scripts/sea.js): the name it was exec'd as picks `pinto` or `pinto-ipam`, as
// Calico's one binary is installed under two names. It owns that choice and the clean environment only.
import { basename } from 'node:path'
import { runPlugin, writeStdout } from './main.js'
import { ipamCmdAdd, ipamCmdCheck, ipamCmdDel, ipamCmdGc, ipamCmdStatus } from './ipam-plugin.js'
import { cmdAdd, cmdCheck, cmdDel, cmdGc, cmdStatus } from './pinto-plugin.js'
import { CniError, ERR, LATEST, errorJson } from './spec.js'
import { nodeVariables, roleFor } from './sea-role.js'

// The sea config ignores NODE_OPTIONS (execArgvExtension "none"), but Node still reads other NODE_*
// variables at start (NODE_COMPILE_CACHE, NODE_V8_COVERAGE, NODE_REDIRECT_WARNINGS, NODE_CHANNEL_FD...).
// A runtime's environment carrying one gets the same program run again without them, so nothing of the
// node's environment changes what the plugin does; the usual environment has none and pays nothing.
const inherited = nodeVariables(process.env)
if (inherited.length > 0) {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !inherited.includes(k)) env[k] = v
  const proc = process as unknown as { execve(file: string, args: readonly string[], env: Record<string, string>): never }
  proc.execve(process.execPath, [process.argv0, ...process.argv.slice(2)], env)
}

const role = roleFor(process.argv0)
if (role === 'main') runPlugin('main', { ADD: (i) => cmdAdd(i), DEL: (i) => cmdDel(i), CHECK: (i) => cmdCheck(i), STATUS: cmdStatus, GC: cmdGc })
else if (role === 'ipam') runPlugin('ipam', { ADD: ipamCmdAdd, DEL: ipamCmdDel, CHECK: ipamCmdCheck, STATUS: ipamCmdStatus, GC: ipamCmdGc })
else {
  const msg = `exec'd as ${JSON.stringify(basename(process.argv0))}: this executable serves only the plugin types "pinto" and "pinto-ipam" (install it under those names)`
  writeStdout(errorJson(LATEST, new CniError(ERR.invalidConfig, msg)) + '\n')
  process.exit(1)
}
