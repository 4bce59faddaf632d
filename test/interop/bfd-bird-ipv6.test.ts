// BFD against BIRD 2's `protocol bfd` over IPv6 only: Up at 100 ms × 3, a silent cut, the link back (bfd-bird-suite.ts).
import t from 'tap'
import { birdBfdSuite } from './bfd-bird-suite.js'

t.test('BFD over IPv6 with BIRD: Up at 100 ms x 3, a cut, the link back', (t) => birdBfdSuite(t, 'ipv6', '2001:db8:fe::/48'))
