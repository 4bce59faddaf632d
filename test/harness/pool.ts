// Runs many async jobs at most `width` at a time, as a runtime starts pods with bounded parallelism on a small
// machine; the results keep the jobs' order. It owns nothing else.

/** fn(0..n-1), at most `width` running at once; the results in index order. */
export async function pool<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(n)
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) {
      const i = next++
      out[i] = await fn(i)
    }
  }))
  return out
}
