// `pintoctl bgp ...`: BGP tools for operators. The decoder is filled in with the codec.
export async function bgpCommand(_args: readonly string[]): Promise<number> {
  process.stderr.write('pintoctl bgp: not implemented yet\n')
  return 1
}
