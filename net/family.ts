// The address family: one type for every folder, the IP version as a number. Other things called a family
// have names of their own (a BGP AFI/SAFI pair is bgp's `AfiSafi`, a datastore key's collection config's
// `KeyFamily`). Pure.

export type Family = 4 | 6

/** How many bits an address of the family has. */
export function familyBits(family: Family): number {
  return family === 4 ? 32 : 128
}

/** The family of address or prefix text, by its form alone (a colon is IPv6); it checks nothing else. */
export function familyOfText(text: string): Family {
  return text.includes(':') ? 6 : 4
}
