// cni's face, for the agent: the plugins' verb handlers and pod wiring (which the agent runs itself for the
// CNI channel), the network config and spec errors, the agent channel and IPAM client protocols, and the
// release spool with the recovery record it writes. The plugin executables start from their *-main.ts files and never load this one.

export * from './agent-channel.js'
export * from './config.js'
export * from './exec.js'
export * from './ipam-client.js'
export * from './pinto-plugin.js'
export * from './recovery-record.js'
export * from './release-spool.js'
export * from './spec.js'
export * from './stdin.js'
export * from './veth-name.js'
export * from './wiring.js'
export * from './wiring-plan.js'
