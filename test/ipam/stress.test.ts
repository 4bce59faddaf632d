// Four real processes on two node identities allocate and release against one store at once. Every
// allocation is logged with monotonic timestamps; no address may be held by two handles at overlapping
// times, the store must end consistent, and `check` must be clean.
import t from 'tap'
import { stress } from './stress-run.js'
import { embeddedStore } from './stores.js'

t.test('embedded store: 4 processes x 250 allocations on 2 nodes', async (t) => {
  const { spec } = await embeddedStore(t)
  await stress(t, spec)
})

t.test('etcd: 4 processes x 250 allocations on 2 nodes', async (t) => {
  const { startEtcd } = await import('../harness/etcd.js')
  const etcd = await startEtcd(t)
  await stress(t, `etcd://${etcd.endpoint}`)
})
