// How Node.js processes of pinto start: V8 flags pinto-node runs with, in one place for the shebang, the
// demo and the test runners; and the environment the CNI plugins are exec'd with outside a real runtime.
// A small young generation: the RIB keeps a full table in columns, not objects, so what a table dump
// allocates young is the decoder's garbage, and a larger young generation only adds to the peak memory
// without bringing a table in sooner.
// Old-generation growth of 30 % between full collections instead of V8's adaptive factor (up to 4x the live
// heap): while a full table arrives, the default lets garbage grow to several times the live heap before a
// full collection, and that garbage is most of the agent's peak RSS; the more frequent full collections
// do not slow the table down.
export const AGENT_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--heap-growing-percent=30']

/**
 * What a container runtime's environment does not carry but a developer's shell may, unset wherever pinto
 * plays the runtime (the demo, the CNI tests and benches): NODE_OPTIONS, and NODE_EXTRA_CA_CERTS, which
 * Node 20 reads at every start (parsing a CA bundle would be paid by every plugin exec).
 */
export const PLUGIN_EXEC_ENV: Readonly<Record<string, undefined>> = { NODE_OPTIONS: undefined, NODE_EXTRA_CA_CERTS: undefined }
