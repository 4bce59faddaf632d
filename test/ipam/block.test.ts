// The pure block allocator: FIFO reuse, reservations, attributes, sequence numbers and stale releases.
import t from 'tap'
import { parseAddr, parseCidr } from '../../net/index.js'
import {
  type AllocationBlock, blockAssign, blockAutoAssign, blockFree, blockInUse, blockIsEmpty, blockOrdinalsOf, blockProblems,
  blockRelease, blockReleaseByHandle, newBlock,
} from '../../ipam/block.js'
import { decodeBlock } from '../../ipam/records.js'

const fresh = (cidr = '198.18.0.0/29'): AllocationBlock => newBlock(parseCidr(cidr), 'host:n1', '2024-01-01T00:00:00.000Z', 1000)

t.test('a new block offers every address, network and broadcast included', async (t) => {
  for (const [cidr, n] of [['198.18.0.0/29', 8], ['198.18.0.0/26', 64], ['2001:db8::/122', 64], ['198.18.0.5/32', 1]] as const) {
    const b = fresh(cidr)
    t.equal(blockFree(b), n, cidr)
    const got = blockAutoAssign(b, n + 5, 'h', {})
    t.equal(got.length, n, `${cidr}: all ${n} handed out, no more`)
    t.same(blockProblems(b), [])
  }
  const b = fresh()
  t.same(blockAutoAssign(b, 8, 'h', {}).map((a) => a.address), ['198.18.0.0', '198.18.0.1', '198.18.0.2', '198.18.0.3', '198.18.0.4', '198.18.0.5', '198.18.0.6', '198.18.0.7'])
  const v6 = fresh('2001:db8::40/122')
  t.same(blockAutoAssign(v6, 2, 'h', {}).map((a) => a.address), ['2001:db8::40', '2001:db8::41'])
})

t.test('released addresses are reused first-in-first-out', async (t) => {
  const b = fresh()
  const steps: [string, () => string[]][] = [
    ['take 3', () => blockAutoAssign(b, 3, 'a', {}).map((x) => x.address)],
    ['release .1', () => blockRelease(b, [{ ordinal: 1 }]).released.map((r) => String(r.ordinal))],
    ['release .0', () => blockRelease(b, [{ ordinal: 0 }]).released.map((r) => String(r.ordinal))],
    ['take 6: the never-used ones first, then .1, then .0', () => blockAutoAssign(b, 6, 'b', {}).map((x) => x.address)],
  ]
  const want = [
    ['198.18.0.0', '198.18.0.1', '198.18.0.2'],
    ['1'],
    ['0'],
    ['198.18.0.3', '198.18.0.4', '198.18.0.5', '198.18.0.6', '198.18.0.7', '198.18.0.1'],
  ]
  steps.forEach(([name, run], i) => t.same(run(), want[i], name))
  t.same(b.unallocated, [0])
  t.same(blockProblems(b), [])
})

t.test('reservations are skipped and stay free in place', async (t) => {
  const b = fresh()
  const reserved = (_f: 4 | 6, v: bigint): boolean => v === parseAddr('198.18.0.0').value || v === parseAddr('198.18.0.2').value
  t.same(blockAutoAssign(b, 2, 'h', {}, reserved).map((a) => a.address), ['198.18.0.1', '198.18.0.3'])
  t.same(b.unallocated, [0, 2, 4, 5, 6, 7])
  t.equal(blockFree(b, reserved), 4)
  t.equal(blockAssign(b, 0, 'manual', {}).address, '198.18.0.0', 'asking by address may take a reserved one')
})

t.test('attributes are shared per handle and dropped with their last address', async (t) => {
  const b = fresh()
  blockAutoAssign(b, 2, 'net.c1', { namespace: 'ns', pod: 'p1', node: 'n1' })
  blockAutoAssign(b, 1, 'net.c2', { namespace: 'ns', pod: 'p2', node: 'n1' })
  t.equal(b.attributes.length, 2)
  t.same(blockOrdinalsOf(b, 'net.c1'), [0, 1])
  const r = blockReleaseByHandle(b, 'net.c1')
  t.same(r.released.map((x) => x.ordinal), [0, 1])
  t.same(b.attributes, [{ handleId: 'net.c2', secondary: { namespace: 'ns', pod: 'p2', node: 'n1' } }], 'c1 attribute removed, c2 renumbered')
  t.equal(b.allocations[2], 0)
  t.equal(blockInUse(b), 1)
  t.same(blockProblems(b), [])
})

t.test('a stale release (old sequence number or handle) never frees a reused address', async (t) => {
  const b = fresh()
  const [first] = blockAutoAssign(b, 1, 'old', {})
  blockRelease(b, [{ ordinal: 0, handleId: 'old', sequenceNumber: first!.sequenceNumber }])
  // Exhaust the FIFO so ordinal 0 comes round again to a new owner.
  const again = blockAutoAssign(b, 8, 'new', {})
  const reused = again.find((a) => a.ordinal === 0)!
  t.not(reused.sequenceNumber, first!.sequenceNumber, 'a new sequence number on reuse')
  const cases: [string, Parameters<typeof blockRelease>[1], string][] = [
    ['stale sequence number', [{ ordinal: 0, sequenceNumber: first!.sequenceNumber }], 'bad-sequence'],
    ['stale handle', [{ ordinal: 0, handleId: 'old' }], 'bad-handle'],
  ]
  for (const [name, req, reason] of cases) {
    const out = blockRelease(b, req)
    t.same(out.released, [], name)
    t.same(out.skipped, [{ ordinal: 0, reason }], name)
  }
  t.equal(blockRelease(b, [{ ordinal: 0, handleId: 'new', sequenceNumber: reused.sequenceNumber }]).released.length, 1, 'the current owner can release')
  t.same(blockRelease(b, [{ ordinal: 0 }]).skipped, [{ ordinal: 0, reason: 'not-allocated' }])
  t.same(blockRelease(b, [{ ordinal: 3 }, { ordinal: 3 }]).released.length, 1, 'duplicates in one request count once')
  t.same(blockProblems(b), [])
})

t.test('assigning a taken address fails; emptiness follows allocations', async (t) => {
  const b = fresh()
  t.ok(blockIsEmpty(b))
  blockAssign(b, 5, 'h', {})
  t.notOk(blockIsEmpty(b))
  t.throws(() => blockAssign(b, 5, 'h2', {}), /198\.18\.0\.5 is already assigned/)
  t.throws(() => blockAssign(b, 8, 'h2', {}), RangeError)
  t.notOk(b.unallocated.includes(5))
})

t.test('decoding checks every field and blockProblems catches inconsistencies', async (t) => {
  const good = JSON.stringify(fresh())
  t.same(decodeBlock('/k', good), JSON.parse(good))
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ cidr: '198.18.0.1/29' }, /^\/k: cidr: .*host bits/],
    [{ allocations: 'x' }, /^\/k: allocations: expected an array/],
    [{ unallocated: [1.5] }, /^\/k: unallocated: expected an array of ordinals/],
    [{ sequenceNumber: '1' }, /^\/k: sequenceNumber: expected an integer/],
    [{ affinity: 3 }, /^\/k: affinity: /],
  ]
  for (const [patch, msg] of bad) t.throws(() => decodeBlock('/k', JSON.stringify({ ...JSON.parse(good), ...patch })), msg)
  t.throws(() => decodeBlock('/k', '{'), /^\/k: \(value\): not JSON/)
  const b = fresh()
  b.unallocated.push(3)
  b.allocations[1] = 7
  t.same(blockProblems(b), ['unallocated[1]: ordinal 1 is also allocated', 'unallocated[8]: ordinal 3 is listed twice', 'allocations[1]: attribute index 7 out of range', 'sequenceNumberForAllocation[1]: missing'])
})
