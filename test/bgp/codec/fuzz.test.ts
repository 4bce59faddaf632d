// A sample of the codec fuzzer (bench/fuzz-codec runs a million): mutated and random inputs give
// only messages or BgpErrors, and every decoded message survives a re-encode unchanged.
import t from 'tap'
import { fuzzCodec } from '../../fuzz/bgp-codec.js'

t.test('20 000 mutated inputs: only messages or BgpErrors', async (t) => {
  const seed = Number(process.env.PINTO_FUZZ_SEED ?? 20261129)
  const r = fuzzCodec(20_000, seed)
  t.same(r.failures, [], `seed ${seed}`)
  t.ok(r.messages > 1000, `some inputs still decode (${r.messages})`)
  t.ok(r.bgpErrors > 1000, `some inputs are rejected (${r.bgpErrors})`)
})
