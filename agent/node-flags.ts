// How Node.js processes of pinto start: V8 flags pinto-node runs with, in one place for the shebang, the
// demo and the test runners; and the environment the CNI plugins are exec'd with outside a real runtime.
// A small young generation: the RIB keeps a full table in columns, not objects, so what a table dump
// allocates young is the decoder's garbage, and a larger young generation only adds to the peak memory.
// In-process, 1M prefixes take the same ~0.27 s with 2, 4, 8 or 16 MB semi-spaces. (When the RIB still
// had an object per prefix, bench/ingest gave 239-249 B/prefix at 100k with 2 MB, 278-289 with 4 MB.)
// Old-generation growth of 30 % between full collections instead of V8's adaptive factor (up to 4x the live
// heap): the live heap with a 1M-route table is ~90 MB, and with the default V8 let garbage reach ~430 MB
// before collecting (bench/node-path at 1M: peak RSS 533 MB; with 30 %, 258 MB, a full collection every
// ~1.5 s during the table's arrival at ~10-15 ms each, the table in the same time).
export const AGENT_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--heap-growing-percent=30']

/**
 * What a container runtime's environment does not carry but a developer's shell may, unset wherever pinto
 * plays the runtime (the demo, the CNI tests and benches): NODE_OPTIONS, and NODE_EXTRA_CA_CERTS, which
 * Node 20 reads at every start (a CA bundle costs ~50 ms of each plugin exec here).
 */
export const PLUGIN_EXEC_ENV: Readonly<Record<string, undefined>> = { NODE_OPTIONS: undefined, NODE_EXTRA_CA_CERTS: undefined }
