// The one IP address and CIDR module of config, IPAM, felix and the agent: ip-num parses and validates
// what people and other programs give us (parse.ts), a numeric path reads back what pinto wrote
// (read.ts), and the arithmetic is on bigint (arith.ts). The BGP codec keeps its own numeric prefixes.

export * from './arith.js'
export { AddrError, parseAddr, parseCidr, parseIfAddr, tryAddr, type ParseOptions } from './parse.js'
export { readAddr, readCidr } from './read.js'
