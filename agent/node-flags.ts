// How Node.js processes of pinto start: V8 flags pinto-node runs with, in one place for the shebang, the
// demo and the test runners; and the environment the CNI plugins are exec'd with outside a real runtime.
// A small young generation: the RIB's long-lived objects are made in old space directly (see
// newDestination), so little is gained from a large one, and its size shows in the peak memory of a
// table dump. bench/ingest: 4 MB semi-spaces 278-289 B/prefix at 100k, 2 MB 239-249, 1 MB 238 but 1M
// prefixes 0.79-1.03 s instead of 0.60-0.67 s (the default, 16 MB, took ~1.1 s when it was chosen).

export const AGENT_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2']

/**
 * What a container runtime's environment does not carry but a developer's shell may, unset wherever pinto
 * plays the runtime (the demo, the CNI tests and benches): NODE_OPTIONS, and NODE_EXTRA_CA_CERTS, which
 * Node 20 reads at every start (a CA bundle costs ~50 ms of each plugin exec here).
 */
export const PLUGIN_EXEC_ENV: Readonly<Record<string, undefined>> = { NODE_OPTIONS: undefined, NODE_EXTRA_CA_CERTS: undefined }
