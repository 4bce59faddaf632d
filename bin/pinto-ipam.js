#!/usr/bin/env node
// pinto-ipam: see README.md. Until its implementation lands it refuses to run rather than fake output.
process.stderr.write('pinto-ipam: not implemented yet\n')
process.exit(1)
