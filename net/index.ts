// The face of net/, the ground floor every folder stands on: the address family, address text and its
// numeric forms (ip.ts), prefixes and their arithmetic (prefix.ts), parsing what people give (parse.ts, on
// ip-num), typed-array columns, and the prefix-keyed tables. Pure: no I/O, and nothing from another folder.

export * from './family.js'
export * from './ip.js'
export * from './prefix.js'
export { AddrError, parseAddr, parseCidr, parseIfAddr, readAddr, readCidr, readIpv4Prefix, tryAddr, type ParseOptions } from './parse.js'
export { discard, grown, touchedArray } from './typed-arrays.js'
export { Ipv4Index, Ipv6Column, Ipv6Index, type AddressColumn, type Ipv6Keys } from './prefix-index.js'
export { V4PrefixMap, V6PrefixMap } from './prefix-map.js'
export { MIN_SLOTS } from './prefix-slots.js'
