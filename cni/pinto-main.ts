// Entry of the `pinto` binary (bundled to dist/bundle/pinto.cjs): wires the verb handlers into the skeleton.
import { pluginMain } from './main.js'
import { cmdAdd, cmdCheck, cmdDel, cmdGc, cmdStatus } from './pinto-plugin.js'

void pluginMain('main', { ADD: (i) => cmdAdd(i), DEL: (i) => cmdDel(i), CHECK: (i) => cmdCheck(i), STATUS: cmdStatus, GC: cmdGc }).then((code) => {
  // At once: the result is written (synchronously), and nothing left on the loop (a socket's close, an
  // `ip` left to finish on its own) matters to the runtime any more.
  process.exit(code)
})
