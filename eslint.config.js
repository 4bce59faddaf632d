// The lint `npm run lint` runs and CI holds at zero warnings: typescript-eslint's type-checked recommended
// rules over every TypeScript source, test and bench (each file checked against its nearest tsconfig.json),
// and ESLint's recommended rules over the plain-JavaScript scripts and program stubs.
import js from '@eslint/js'
import { defineConfig } from 'eslint/config'
import tseslint from 'typescript-eslint'

// Node's own globals (process, URL, Buffer, timers, ...), read from the Node.js that runs the lint.
const nodeGlobals = Object.fromEntries(Object.getOwnPropertyNames(globalThis).map((name) => [name, 'readonly']))

export default defineConfig(
  { ignores: ['dist/', '.cache/', '.tap/', 'node_modules/'] },
  {
    files: ['scripts/**/*.js', 'bin/**/*.js', 'eslint.config.js'],
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: nodeGlobals },
  },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // tap queues a subtest and its parent waits for it: t.test() needs no await.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: '@tapjs/test', name: ['test', 'todo', 'skip', 'only'] }] },
      ],
      // A promise returned inside try/catch/finally is awaited there, or the catch and finally miss its failure.
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      // `_` names what a destructuring leaves out on purpose.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // The attribute codec's descriptors throw a bare ValueError that the generic RFC 7606 loop catches and
      // turns into a BgpError; it never leaves bgp/codec/attributes.ts.
      '@typescript-eslint/only-throw-error': [
        'error',
        { allow: [{ from: 'file', name: 'ValueError', path: 'bgp/codec/attributes.ts' }] },
      ],
      // Off: an async function without await is how a method meets a Promise-returning interface (fastify
      // plugins and handlers, the Datastore, tap's callbacks); dropping `async` would make its throws synchronous.
      '@typescript-eslint/require-await': 'off',
      // Off: the errors that wrap a caught one carry its message in their own, and pino's err serializer
      // appends a cause's message, so a `cause` would print it twice in every log line.
      'preserve-caught-error': 'off',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      // A variable a teardown closure reads before it is first set stays `let`: as a const it would throw there.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Off in tests: they reach into parsed JSON and YAML and API bodies through `any`, and their assertions
    // are what check the shape. Sources and benches keep the rules.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // A test's regex may copy a table's or a config's layout, runs of spaces and all.
      'no-regex-spaces': 'off',
    },
  },
)
