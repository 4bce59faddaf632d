// Entry of the `pinto-ipam` binary (bundled to dist/bundle/pinto-ipam.cjs).
import { ipamCmdAdd, ipamCmdCheck, ipamCmdDel, ipamCmdGc, ipamCmdStatus } from './ipam-plugin.js'
import { pluginMain } from './main.js'

void pluginMain('ipam', { ADD: ipamCmdAdd, DEL: ipamCmdDel, CHECK: ipamCmdCheck, STATUS: ipamCmdStatus, GC: ipamCmdGc }).then((code) => {
  process.exitCode = code
})
