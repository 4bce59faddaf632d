// pintoctl demo's options, as a table: what each runtime takes and the error naming the option it refuses.
import t from 'tap'
import { DEMO_DEFAULTS, OptionError, parseDemoOptions } from '../../../agent/demo/options.js'

t.test('runtimes and the options each takes', async (t) => {
  t.equal(parseDemoOptions([]).runtime, DEMO_DEFAULTS.runtime)
  t.equal(parseDemoOptions(['--runtime', 'kubernetes']).runtime, 'kubernetes')
  t.equal(parseDemoOptions(['--runtime=kubernetes', '--image', 'localhost/pinto-node:x', '--nodes', '4', '--pods', '0']).image, 'localhost/pinto-node:x')
  t.equal(parseDemoOptions(['--runtime', 'podman', '--image', 'localhost/pinto-node:x']).image, 'localhost/pinto-node:x')
  const refused: [string[], RegExp][] = [
    [['--runtime', 'docker'], /^--runtime: "docker" is not one of process, podman, kubernetes$/],
    [['--image', 'localhost/x:1'], /^--image: only with --runtime podman or kubernetes$/],
    [['--runtime', 'kubernetes', '--encap', 'vxlan'], /^--encap: not with --runtime kubernetes/],
    [['--runtime', 'kubernetes', '--topology', 'rr'], /^--topology: not with --runtime kubernetes$/],
    [['--runtime', 'kubernetes', '--tor', 'bird'], /^--tor: not with --runtime kubernetes$/],
    [['--runtime', 'kubernetes', '--image', 'Bad Ref'], /^--image: "Bad Ref" is not an image reference$/],
  ]
  for (const [args, message] of refused) {
    let caught: unknown
    try {
      parseDemoOptions(args)
    } catch (e) {
      caught = e
    }
    t.ok(caught instanceof OptionError, `${args.join(' ')}: refused`)
    t.match((caught as Error | undefined)?.message, message, `${args.join(' ')}: names the option`)
  }
})
