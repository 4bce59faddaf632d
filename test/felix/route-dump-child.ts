// Run by route-dump.test.ts inside a node namespace (`ip netns exec`): reads one table of the namespace
// over the route socket's rtnetlink dump, as felix reads it, and prints the routes as one JSON array.
// Its stdin is JSON: the families and the table to read.

import { readStdinSync } from '../../cni/stdin.js'
import { RouteSocket } from '../../felix/route-socket.js'

const job = JSON.parse(readStdinSync()) as { families: (4 | 6)[]; table: number }
const socket = await RouteSocket.open()
if (socket instanceof Error) {
  process.stderr.write(`route socket: ${socket.message}\n`)
  process.exit(2)
}
try {
  process.stdout.write(JSON.stringify(await socket.readTable(job.families, job.table)) + '\n')
} finally {
  socket.close()
}
