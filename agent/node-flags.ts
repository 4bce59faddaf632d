// V8 flags pinto-node runs with, in one place for the shebang, the demo and the test runners.
// A small young generation promotes the long-lived RIB objects of a table dump sooner: measured on
// 1M prefixes, receive+flush took ~0.75 s with 4 MB semi-spaces against ~1.1 s with the default.

export const AGENT_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4']
