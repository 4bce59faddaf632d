// Entry of the single executable that serves both plugins (bundled to dist/bundle/pinto-sea.cjs, built
// into dist/sea/pinto by scripts/sea.js): the name it was exec'd as picks `pinto` or `pinto-ipam`, as
// Calico's one binary is installed under two names. It owns that choice only; sea-env.ts, imported
// first, keeps Node.js's own variables from the runtime's environment out.
import './sea-env.js'
import { runPlugin, writeStdout } from './main.js'
import { ipamCmdAdd, ipamCmdCheck, ipamCmdDel, ipamCmdGc, ipamCmdStatus } from './ipam-plugin.js'
import { cmdAdd, cmdCheck, cmdDel, cmdGc, cmdStatus } from './pinto-plugin.js'
import { CniError, ERR, LATEST, errorJson } from './spec.js'
import { nameOf, roleFor } from './sea-role.js'

const role = roleFor(process.argv0)
if (role === 'main') runPlugin('main', { ADD: (i) => cmdAdd(i), DEL: (i) => cmdDel(i), CHECK: (i) => cmdCheck(i), STATUS: cmdStatus, GC: cmdGc })
else if (role === 'ipam') runPlugin('ipam', { ADD: ipamCmdAdd, DEL: ipamCmdDel, CHECK: ipamCmdCheck, STATUS: ipamCmdStatus, GC: ipamCmdGc })
else {
  const msg = `exec'd as ${JSON.stringify(nameOf(process.argv0))}: this executable serves only the plugin types "pinto" and "pinto-ipam" (install it under those names)`
  writeStdout(errorJson(LATEST, new CniError(ERR.invalidConfig, msg)) + '\n')
  process.exit(1)
}
