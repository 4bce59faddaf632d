// The plugins' process runner: input as a string or as chunks that come later, and leaveWhen, which lets
// a child run on without holding the plugin's process open.
import t from 'tap'
import { execa } from 'execa'
import { run, withSystemPath } from '../../cni/exec.js'

const EXEC = new URL('../../cni/exec.js', import.meta.url).pathname

t.test('a string and chunks that come later both reach the child', async (t) => {
  t.same(await run('cat', [], { input: 'one\n' }), { code: 0, stdout: 'one\n', stderr: '' })
  async function* later(): AsyncGenerator<string> {
    yield 'a\n'
    await new Promise((r) => setTimeout(r, 20))
    yield 'b\n'
  }
  t.equal((await run('cat', [], { input: later() })).stdout, 'a\nb\n')
  const failed = await run('sh', ['-c', 'echo no >&2; exit 3'])
  t.same(failed, { code: 3, stdout: '', stderr: 'no\n' })
})

t.test('leaveWhen: the child ends first, and its answer counts', async (t) => {
  const r = await run('sh', ['-c', 'echo bad >&2; exit 2'], { leaveWhen: () => false })
  t.same(r, { code: 2, stdout: '', stderr: 'bad\n' })
})

t.test('leaveWhen: once it holds, the result comes and the process may exit while the child runs on', async (t) => {
  // A separate Node.js process runs a 30 s sleep and leaves it at once; it must exit long before the sleep
  // ends. The sleep's length is unique to this test run, so only our own sleep is found and ended.
  const secs = `29.${String(process.pid).padStart(7, '0')}`
  const ours = async (): Promise<number[]> => {
    const ps = await execa('pgrep', ['-f', `^sleep ${secs.replace('.', '\\.')}$`], { reject: false })
    return String(ps.stdout).split('\n').filter((p) => p !== '').map(Number)
  }
  t.teardown(async () => {
    for (const pid of await ours()) process.kill(pid)
  })
  const script = `import { run } from ${JSON.stringify(EXEC)}
const r = await run('sleep', [${JSON.stringify(secs)}], { leaveWhen: () => true })
console.log(JSON.stringify(r))`
  const child = execa(process.execPath, ['--input-type=module', '-e', script], { timeout: 15_000, reject: false })
  const r = await child
  t.equal(r.exitCode, 0, String(r.stderr))
  t.same(JSON.parse(String(r.stdout)), { code: 0, stdout: '', stderr: '', left: true })
  t.equal((await ours()).length, 1, 'the sleep it left runs on')
})

t.test('the system directories join whatever PATH the runtime gave, after it and once each', async (t) => {
  t.equal(withSystemPath(undefined), '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
  t.equal(withSystemPath('/opt/bin:/usr/bin'), '/opt/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin')
  t.equal(withSystemPath('::/usr/sbin:'), '/usr/sbin:/usr/local/sbin:/usr/local/bin:/usr/bin:/sbin:/bin')
})
