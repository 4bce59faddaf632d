// The public face of pinto's BGP library: the pure codec (bgp/codec), and the speaker built on it.

export * from './codec/index.js'
export * from './speaker.js'
