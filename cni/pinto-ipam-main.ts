// Entry of the `pinto-ipam` binary (bundled to dist/bundle/pinto-ipam.cjs).
import { ipamCmdAdd, ipamCmdCheck, ipamCmdDel, ipamCmdGc, ipamCmdStatus } from './ipam-plugin.js'
import { runPlugin } from './main.js'

runPlugin('ipam', { ADD: ipamCmdAdd, DEL: ipamCmdDel, CHECK: ipamCmdCheck, STATUS: ipamCmdStatus, GC: ipamCmdGc })
