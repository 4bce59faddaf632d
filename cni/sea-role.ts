// Pure choices of the two-name plugin executable: which plugin a name serves, and which variables of
// the environment Node.js itself reads (and the executable therefore drops). No I/O here, and no
// import: sea-env.ts runs it before any module of Node's loads.

export type SeaRole = 'main' | 'ipam'

/** The file name in `argv0`, a path or a bare name. */
export function nameOf(argv0: string): string {
  return argv0.slice(argv0.lastIndexOf('/') + 1)
}

/** The plugin the executable serves when exec'd as `argv0`; undefined for any other name. */
export function roleFor(argv0: string): SeaRole | undefined {
  const name = nameOf(argv0)
  if (name === 'pinto') return 'main'
  if (name === 'pinto-ipam') return 'ipam'
  return undefined
}

/**
 * The variables Node.js reads for itself (NODE_OPTIONS, NODE_COMPILE_CACHE, NODE_V8_COVERAGE, ...) and
 * libuv's UV_THREADPOOL_SIZE: none is meant for a CNI plugin, whose behaviour must not depend on them.
 */
export function nodeVariables(env: Readonly<Record<string, string | undefined>>): string[] {
  return Object.keys(env).filter((k) => k.startsWith('NODE_') || k === 'UV_THREADPOOL_SIZE')
}
