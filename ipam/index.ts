// IPAM's face: the allocator over the datastore (Ipam: pools, blocks, affinities, handles, with its
// compare-and-swap retries), the block model, the stored records' keys and codecs, and the leak check.
// Import from here, not from the files. Nothing here starts on import.

export * from './ipam.js'
export * from './block.js'
export * from './pools.js'
export * from './records.js'
export { checkIpam, checkOwnBlocks, describeProblem, repairIpam, type CheckInput, type CheckReport, type LiveAddress, type Problem, type RepairResult } from './check.js'
