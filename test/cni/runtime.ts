// A small CNI runtime for conflists, doing what libcni does: each plugin gets the list's name and
// cniVersion, the runtimeConfig keys its capabilities ask for, and the previous plugin's result.

import type { Attachment, Lab, PluginRun } from './lab.js'

export interface ConfList {
  readonly cniVersion: string
  readonly name: string
  readonly plugins: readonly Record<string, unknown>[]
}

function pluginConf(list: ConfList, plugin: Record<string, unknown>, runtime: Record<string, unknown>, prev: unknown): Record<string, unknown> {
  const caps = (plugin['capabilities'] ?? {}) as Record<string, boolean>
  const rc = Object.fromEntries(Object.entries(runtime).filter(([k]) => caps[k] === true))
  return {
    ...plugin, name: list.name, cniVersion: list.cniVersion,
    ...(Object.keys(rc).length > 0 ? { runtimeConfig: rc } : {}),
    ...(prev !== undefined ? { prevResult: prev } : {}),
  }
}

/** ADD through the chain; the last plugin's output is the result. Stops at the first failure. */
export async function addList(lab: Lab, list: ConfList, att: Attachment, runtime: Record<string, unknown> = {}): Promise<PluginRun> {
  let prev: unknown
  let last: PluginRun | undefined
  for (const p of list.plugins) {
    last = await lab.exec(String(p['type']), 'ADD', pluginConf(list, p, runtime, prev), att)
    if (last.code !== 0) return last
    prev = last.json
  }
  return last as PluginRun
}

/** CHECK in order, DEL in reverse order, each with the cached ADD result as prevResult. */
export async function checkList(lab: Lab, list: ConfList, att: Attachment, result: unknown, runtime: Record<string, unknown> = {}): Promise<PluginRun[]> {
  const out: PluginRun[] = []
  for (const p of list.plugins) out.push(await lab.exec(String(p['type']), 'CHECK', pluginConf(list, p, runtime, result), att))
  return out
}

export async function delList(lab: Lab, list: ConfList, att: Attachment, result: unknown, runtime: Record<string, unknown> = {}): Promise<PluginRun[]> {
  const out: PluginRun[] = []
  for (const p of [...list.plugins].reverse()) out.push(await lab.exec(String(p['type']), 'DEL', pluginConf(list, p, runtime, result), att))
  return out
}
