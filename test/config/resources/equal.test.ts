// deepEqual, the equality the agent and felix use to see whether what they computed changed: plain data
// equal by value whatever the order of its keys, a key holding undefined as no key; nothing else equal.

import t from 'tap'
import { deepEqual } from '../../../config/resources/index.js'

t.test('equal values', async (t) => {
  const rows: [unknown, unknown, string][] = [
    [1, 1, 'numbers'],
    [NaN, NaN, 'NaN is itself'],
    ['a', 'a', 'strings'],
    [undefined, undefined, 'undefined'],
    [{ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }, 'keys in another order'],
    [{ a: 1, b: undefined }, { a: 1 }, 'a key holding undefined is no key'],
    [new Map([['x', { n: 1 }]]), new Map([['x', { n: 1 }]]), 'maps by value'],
    [new Set(['x', 'y']), new Set(['y', 'x']), 'sets of primitives'],
    [Uint8Array.of(1, 2, 3), Uint8Array.of(1, 2, 3), 'typed arrays by bytes'],
    [[], [], 'empty arrays'],
  ]
  for (const [a, b, why] of rows) {
    t.ok(deepEqual(a, b), why)
    t.ok(deepEqual(b, a), `${why} (swapped)`)
  }
})

t.test('different values', async (t) => {
  const rows: [unknown, unknown, string][] = [
    [1, '1', 'number and string'],
    [0, -0, 'zero signs'],
    [null, undefined, 'null and undefined'],
    [null, {}, 'null and an object'],
    [{ a: 1 }, { a: 2 }, 'a value'],
    [{ a: 1 }, { a: 1, b: 2 }, 'a key more'],
    [{ a: 1, b: undefined }, { a: 1, c: 2 }, 'an undefined key against a defined one'],
    [[1, 2], [2, 1], 'order of an array'],
    [[1], [1, undefined], 'array length'],
    [[1], { 0: 1 }, 'an array and an object'],
    [new Map([['x', 1]]), new Map([['y', 1]]), 'map keys'],
    [new Map([['x', 1]]), { x: 1 }, 'a map and an object'],
    [new Set([{ a: 1 }]), new Set([{ a: 1 }]), 'set members by identity'],
    [Uint8Array.of(1, 2), Uint8Array.of(1, 3), 'bytes'],
    [Uint8Array.of(1, 2), [1, 2], 'typed array and array'],
  ]
  for (const [a, b, why] of rows) {
    t.notOk(deepEqual(a, b), why)
    t.notOk(deepEqual(b, a), `${why} (swapped)`)
  }
})
