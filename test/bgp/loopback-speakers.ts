// Two started speakers on loopback (127.0.0.1 and 127.0.0.2, ports chosen by the kernel), stopped in
// t.teardown: the shared start of the speaker and API tests, which then add the peers they need.
import type { Test } from 'tap'
import { BgpSpeaker } from '../../bgp/index.js'

export async function loopbackSpeakers(t: Test, asA = 64512, asB = 64512, hosts: readonly [string, string] = ['127.0.0.1', '127.0.0.2']): Promise<{ a: BgpSpeaker; b: BgpSpeaker }> {
  const a = new BgpSpeaker({ asn: asA, routerId: '192.0.2.1', listen: { port: 0, hosts: [hosts[0]] } })
  const b = new BgpSpeaker({ asn: asB, routerId: '192.0.2.2', listen: { port: 0, hosts: [hosts[1]] } })
  await a.start()
  await b.start()
  t.teardown(async () => {
    await a.stop()
    await b.stop()
  })
  return { a, b }
}
