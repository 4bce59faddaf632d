// Entry of the `pinto` binary (bundled to dist/bundle/pinto.cjs): wires the verb handlers into the skeleton.
import { runPlugin } from './main.js'
import { cmdAdd, cmdCheck, cmdDel, cmdGc, cmdStatus } from './pinto-plugin.js'

runPlugin('main', { ADD: (i) => cmdAdd(i), DEL: (i) => cmdDel(i), CHECK: (i) => cmdCheck(i), STATUS: cmdStatus, GC: cmdGc })
