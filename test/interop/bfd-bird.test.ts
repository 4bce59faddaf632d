// BFD against BIRD 2's `protocol bfd` over IPv4: Up at 100 ms × 3, a silent cut, the link back (bfd-bird-suite.ts).
import t from 'tap'
import { birdBfdSuite } from './bfd-bird-suite.js'

t.test('BFD with BIRD: Up at 100 ms x 3, a cut, the link back', (t) => birdBfdSuite(t, 'ipv4', '203.0.113.0/24'))
