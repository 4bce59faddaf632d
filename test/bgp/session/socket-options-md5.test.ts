// TCP-MD5 and GTSM through the socket-options module: struct tcp_md5sig as bytes (IPv4, IPv6, IPv4 on
// an IPv6 socket), and real loopback sockets: a keyed listener lets in the matching key only, and a
// connect made with connectSecured carries its key and its GTSM options from the SYN on.

import t from 'tap'
import net from 'node:net'
import { connected } from './connected.js'
import { OPT, SOL, TCP_MD5_MAX_KEY, connectSecured, encodeTcpMd5Sig, fdOf, setIntOption, setTcpMd5Key } from '../../../bgp/session/socket-options.js'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const key = Buffer.from('s3cret')

t.test('struct tcp_md5sig for an IPv4 peer', async (t) => {
  const b = encodeTcpMd5Sig('192.0.2.7', key, 4)
  t.equal(b.length, 216, 'sockaddr_storage 128 + flags 1 + prefixlen 1 + keylen 2 + pad 4 + key 80')
  t.equal(hex(b.subarray(0, 2)), '0200', 'sin_family AF_INET, host order')
  t.equal(hex(b.subarray(2, 4)), '0000', 'sin_port 0')
  t.equal(hex(b.subarray(4, 8)), 'c0000207', 'sin_addr 192.0.2.7')
  t.equal(hex(b.subarray(8, 128)), '00'.repeat(120), 'rest of the sockaddr_storage')
  t.equal(b[128], 0, 'tcpm_flags: no prefix, no ifindex')
  t.equal(b[129], 0, 'tcpm_prefixlen')
  t.equal(hex(b.subarray(130, 132)), '0600', 'tcpm_keylen 6, host order')
  t.equal(hex(b.subarray(132, 136)), '00000000', '__tcpm_pad')
  t.equal(b.subarray(136, 142).toString(), 's3cret', 'tcpm_key')
  t.equal(hex(b.subarray(142)), '00'.repeat(74), 'the rest of the 80-byte key')
})

t.test('struct tcp_md5sig for an IPv6 peer, and an IPv4 peer on an IPv6 socket', async (t) => {
  const b = encodeTcpMd5Sig('2001:db8::1', key, 6)
  t.equal(hex(b.subarray(0, 2)), '0a00', 'sin6_family AF_INET6')
  t.equal(hex(b.subarray(2, 8)), '000000000000', 'sin6_port, sin6_flowinfo')
  t.equal(hex(b.subarray(8, 24)), '20010db8000000000000000000000001', 'sin6_addr')
  t.equal(hex(b.subarray(24, 28)), '00000000', 'sin6_scope_id')
  t.equal(hex(b.subarray(130, 132)), '0600', 'tcpm_keylen')
  const m = encodeTcpMd5Sig('192.0.2.7', key, 6)
  t.equal(hex(m.subarray(0, 2)), '0a00', 'AF_INET6: the socket family, not the peer family')
  t.equal(hex(m.subarray(8, 24)), '00000000000000000000ffffc0000207', '::ffff:192.0.2.7')
  t.throws(() => encodeTcpMd5Sig('2001:db8::1', key, 4), /IPv6 address on an IPv4 socket/)
})

t.test('a key longer than 80 bytes, and an address that is not one, are refused', async (t) => {
  t.equal(encodeTcpMd5Sig('192.0.2.7', Buffer.alloc(TCP_MD5_MAX_KEY, 0x61), 4).readUInt16LE(130), 80)
  t.throws(() => encodeTcpMd5Sig('192.0.2.7', Buffer.alloc(81, 0x61), 4), /at most 80 bytes, this one has 81/)
  t.throws(() => encodeTcpMd5Sig('tor-1', key, 4), /tor-1 is not an IPv4 or IPv6 address/)
})

async function keyedListener(t: Tap.Test, host: string, peer: string, family: 4 | 6): Promise<number> {
  const srv = net.createServer((s) => s.on('error', () => s.destroy()).end('ok'))
  await new Promise<void>((resolve) => srv.listen(0, host, resolve))
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())))
  setTcpMd5Key(fdOf(srv), family, peer, key)
  return (srv.address() as net.AddressInfo).port
}


for (const [label, host, peer, family] of [
  ['IPv4', '127.0.0.1', '127.0.0.1', 4],
  ['IPv6', '::1', '::1', 6],
  ['IPv4 peer on an IPv6 listener', '::', '127.0.0.1', 6],
] as const) {
  t.test(`TCP-MD5 both ways, ${label}`, async (t) => {
    const port = await keyedListener(t, host, peer, family)
    t.equal(await connected(connectSecured({ host: peer, port, md5Key: key }), 5000), true, 'the same key connects')
    t.equal(await connected(connectSecured({ host: peer, port, md5Key: Buffer.from('other') }), 1500), false, 'another key does not')
    t.equal(await connected(net.connect({ host: peer, port }), 1500), false, 'no key does not')
  })
}

t.test('connectSecured binds the local address and sets GTSM before the SYN', async (t) => {
  const srv = net.createServer((s) => s.on('error', () => s.destroy()).end())
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())))
  const port = (srv.address() as net.AddressInfo).port
  t.equal(await connected(connectSecured({ host: '127.0.0.1', port, ttlSecurity: 1 }), 1500), false, 'a SYN-ACK with TTL 64 is dropped: GTSM is on before connect(2)')
  setIntOption(fdOf(srv), SOL.ip, OPT.ipTtl, 255, 'IP_TTL')
  const s = connectSecured({ host: '127.0.0.1', port, localAddress: '127.0.0.2', ttlSecurity: 1 })
  await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject))
  t.equal(s.localAddress, '127.0.0.2', 'bound before the connect')
  s.destroy()
  t.throws(() => connectSecured({ host: '127.0.0.1', port, ttlSecurity: 0 }), /GTSM hops must be 1..255, not 0/)
  t.throws(() => connectSecured({ host: '127.0.0.1', port, localAddress: '192.0.2.200' }), /bind 192.0.2.200: Cannot assign requested address/)
})
