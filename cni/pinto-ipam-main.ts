// Entry of the `pinto-ipam` binary (bundled to dist/bundle/pinto-ipam.cjs).
import { ipamCmdAdd, ipamCmdCheck, ipamCmdDel, ipamCmdGc, ipamCmdStatus } from './ipam-plugin.js'
import { pluginMain } from './main.js'

void pluginMain('ipam', { ADD: ipamCmdAdd, DEL: ipamCmdDel, CHECK: ipamCmdCheck, STATUS: ipamCmdStatus, GC: ipamCmdGc }).then((code) => {
  // At once: the result is written (synchronously), and nothing left on the loop (a socket's close, an
  // `ip` left to finish on its own) matters to the runtime any more.
  process.exit(code)
})
