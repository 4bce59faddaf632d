// Runs the codec fuzzer over a million mutated inputs (or PINTO_FUZZ_CASES) and prints the counts,
// the heap after the run and any failure with the bytes that caused it.
// usage: node dist/bench/fuzz-codec.js [cases] [seed]
import { fuzzCodec } from '../test/fuzz/bgp-codec.js'

const cases = Number(process.argv[2] ?? process.env.PINTO_FUZZ_CASES ?? 1_000_000)
const seed = Number(process.argv[3] ?? Date.now() % 0xffffffff)
const started = process.hrtime.bigint()
let total = { cases: 0, messages: 0, bgpErrors: 0, failures: [] as string[] }
const chunk = 100_000
for (let done = 0; done < cases && total.failures.length === 0; done += chunk) {
  const r = fuzzCodec(Math.min(chunk, cases - done), (seed + done) >>> 0)
  total = { cases: total.cases + r.cases, messages: total.messages + r.messages, bgpErrors: total.bgpErrors + r.bgpErrors, failures: [...r.failures] }
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9
console.log(`fuzz-codec: seed ${seed}, ${total.cases} inputs in ${seconds.toFixed(1)} s: ${total.messages} messages decoded, ${total.bgpErrors} BgpErrors, ${total.failures.length} failures`)
console.log(`heap used after the run: ${(process.memoryUsage().heapUsed / 1e6).toFixed(1)} MB`)
for (const f of total.failures) console.log(`FAILURE: ${f}`)
process.exitCode = total.failures.length === 0 ? 0 : 1
