// The seeded generator of the randomized tests and the codec fuzzer (xorshift32): small, fast, and the
// same sequence for the same seed, so a failure can be replayed from the seed its test names.

export class Rng {
  constructor(private state: number) {
    if (this.state === 0) this.state = 0x9e3779b9
  }

  next(): number {
    let x = this.state
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    this.state = x >>> 0
    return this.state
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return this.next() % n
  }

  /** A number in [0, 1). */
  float(): number {
    return this.next() / 4294967296
  }

  pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)]!
  }
}
