// A bit set of a table's row indices: the Adj-RIB-Outs keep which destinations wait and which the peer
// holds in it, one bit a destination. Numbers only.

import { grown, touchedArray } from '../../net/index.js'

/**
 * A set of small non-negative integers (a table's destination indices) as one bit each: an Adj-RIB-Out
 * holding a full table keeps one bit a destination, nothing for the collector to trace, instead of two JS
 * Sets of a million numbers. Iterates in increasing order.
 */
export class IndexSet {
  private words = touchedArray(Uint32Array, 32)
  private count = 0

  get size(): number {
    return this.count
  }

  has(i: number): boolean {
    const w = i >>> 5
    return w < this.words.length && (this.words[w]! & (1 << (i & 31))) !== 0
  }

  /** Adds `i`; false if it was there. */
  add(i: number): boolean {
    const w = i >>> 5
    if (w >= this.words.length) this.grow(w)
    const bit = 1 << (i & 31)
    const words = this.words
    if ((words[w]! & bit) !== 0) return false
    words[w] = words[w]! | bit
    this.count++
    return true
  }

  /** Removes `i`; false if it was not there. */
  delete(i: number): boolean {
    const w = i >>> 5
    const bit = 1 << (i & 31)
    const words = this.words
    if (w >= words.length || (words[w]! & bit) === 0) return false
    words[w] = words[w]! & ~bit
    this.count--
    return true
  }

  clear(): void {
    this.words.fill(0)
    this.count = 0
  }

  private grow(w: number): void {
    let n = this.words.length * 2
    while (n <= w) n *= 2
    this.words = grown(this.words, n, true)
  }

  *[Symbol.iterator](): IterableIterator<number> {
    const words = this.words
    for (let w = 0; w < words.length; w++) {
      let bits = words[w]!
      while (bits !== 0) {
        const low = bits & -bits
        yield (w << 5) + 31 - Math.clz32(low)
        bits ^= low
      }
    }
  }
}
