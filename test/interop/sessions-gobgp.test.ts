// Sessions with gobgp from Debian's package: pinto active and passive reach Established, IPv4 and IPv6 routes
// flow both ways with their attributes (see sessions-suite.ts). Builds and removes its own namespaces.
import t from 'tap'
import { sessionSuite } from './sessions-suite.js'

t.test('pinto <-> gobgp', (t) => sessionSuite(t, 'gobgp'))
