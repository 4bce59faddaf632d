// Calico's label selector language (`all()`, `has(k)`, `k == 'v'`, `k in {...}`, `contains`, `starts with`,
// `&&`, `||`, `!`, parentheses, `global()`): parsed once into an AST, then evaluated against label maps.
// Pure: no resource knowledge here; callers decide which fields hold selectors and what labels mean.

export type SelectorNode =
  | { readonly op: 'all' }
  | { readonly op: 'global' }
  | { readonly op: 'has'; readonly key: string }
  | { readonly op: 'eq' | 'ne' | 'contains' | 'startsWith' | 'endsWith'; readonly key: string; readonly value: string }
  | { readonly op: 'in' | 'notIn'; readonly key: string; readonly values: readonly string[] }
  | { readonly op: 'not'; readonly expr: SelectorNode }
  | { readonly op: 'and' | 'or'; readonly left: SelectorNode; readonly right: SelectorNode }

export type Labels = Readonly<Record<string, string>>

export interface MatchOptions {
  /** What `global()` evaluates to; Calico uses it to mean "not namespaced". Default false. */
  readonly global?: boolean
}

export class SelectorError extends Error {
  constructor(
    readonly selector: string,
    /** Character offset into the selector text where parsing failed. */
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`invalid selector at offset ${offset}: ${reason}`)
    this.name = 'SelectorError'
  }
}

export interface Selector {
  readonly source: string
  readonly ast: SelectorNode
  matches(labels: Labels, options?: MatchOptions): boolean
}

type TokenKind =
  | 'label' | 'string' | '(' | ')' | '{' | '}' | ',' | '==' | '!=' | '!' | '&&' | '||'
  | 'in' | 'not in' | 'contains' | 'starts with' | 'ends with' | 'all' | 'global' | 'has' | 'eof'

interface Token {
  readonly kind: TokenKind
  readonly value: string
  readonly offset: number
}

const LABEL_CHAR = /[a-zA-Z0-9_./-]/
const FUNCTIONS: ReadonlyArray<readonly [string, TokenKind]> = [['all', 'all'], ['global', 'global'], ['has', 'has']]
const OPERATOR_WORDS: ReadonlyArray<readonly [RegExp, TokenKind]> = [
  [/^not[ \t]+in/, 'not in'],
  [/^in/, 'in'],
  [/^contains/, 'contains'],
  [/^starts[ \t]+with/, 'starts with'],
  [/^ends[ \t]+with/, 'ends with'],
]

function tokenize(src: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  const fail = (offset: number, reason: string): never => {
    throw new SelectorError(src, offset, reason)
  }
  const skipSpace = (): void => {
    while (src[i] === ' ' || src[i] === '\t') i++
  }
  const readLabel = (): string => {
    const start = i
    while (i < src.length && LABEL_CHAR.test(src[i] ?? '')) i++
    return src.slice(start, i)
  }
  for (;;) {
    skipSpace()
    if (i >= src.length) {
      tokens.push({ kind: 'eof', value: '', offset: i })
      return tokens
    }
    const start = i
    const c = src[i] ?? ''
    const two = src.slice(i, i + 2)
    if ('(){},'.includes(c)) {
      tokens.push({ kind: c as TokenKind, value: c, offset: start })
      i++
    } else if (c === '"' || c === "'") {
      const end = src.indexOf(c, i + 1)
      if (end < 0) fail(start, 'unterminated string')
      tokens.push({ kind: 'string', value: src.slice(i + 1, end), offset: start })
      i = end + 1
    } else if (two === '==' || two === '!=' || two === '&&' || two === '||') {
      tokens.push({ kind: two, value: two, offset: start })
      i += 2
    } else if (c === '!') {
      tokens.push({ kind: '!', value: c, offset: start })
      i++
    } else if (c === '=' || c === '&' || c === '|') {
      fail(start, `expected ${c}${c}`)
    } else if (tokens.at(-1)?.kind === 'label') {
      // After a label only an operator may follow, so words here are operators, never labels.
      const rest = src.slice(i)
      const op = OPERATOR_WORDS.find(([re]) => re.test(rest))
      if (op === undefined) fail(start, `expected an operator after label '${tokens.at(-1)?.value ?? ''}'`)
      else {
        const m = op[0].exec(rest)
        tokens.push({ kind: op[1], value: op[1], offset: start })
        i += m?.[0].length ?? 0
      }
    } else {
      const fn = FUNCTIONS.find(([name]) => new RegExp(`^${name}[ \\t]*\\(`).test(src.slice(i)))
      if (fn !== undefined) {
        i = src.indexOf('(', i) + 1
        skipSpace()
        let key = ''
        if (fn[1] === 'has') {
          const keyAt = i
          key = readLabel()
          if (key === '') fail(keyAt, 'expected a label name in has()')
          skipSpace()
        }
        if (src[i] !== ')') fail(i, `expected ')' to close ${fn[0]}(`)
        i++
        tokens.push({ kind: fn[1], value: key, offset: start })
      } else {
        const label = readLabel()
        if (label === '') fail(start, `unexpected character ${JSON.stringify(c)}`)
        tokens.push({ kind: 'label', value: label, offset: start })
      }
    }
  }
}

/** Recursive descent: or := and ('||' and)*; and := unary ('&&' unary)*; unary := '!' unary | primary. */
class Parser {
  private pos = 0
  constructor(
    private readonly src: string,
    private readonly tokens: readonly Token[],
  ) {}

  parse(): SelectorNode {
    if (this.peek().kind === 'eof') return { op: 'all' } // Calico: the empty selector selects everything.
    const node = this.parseOr()
    const t = this.peek()
    if (t.kind !== 'eof') this.fail(t, `unexpected ${describe(t)}`)
    return node
  }

  private peek(): Token {
    return this.tokens[this.pos] ?? { kind: 'eof', value: '', offset: this.src.length }
  }

  private next(): Token {
    const t = this.peek()
    this.pos++
    return t
  }

  private fail(t: Token, reason: string): never {
    throw new SelectorError(this.src, t.offset, reason)
  }

  private expect(kind: TokenKind, what: string): Token {
    const t = this.next()
    if (t.kind !== kind) this.fail(t, `expected ${what}, found ${describe(t)}`)
    return t
  }

  private parseOr(): SelectorNode {
    let left = this.parseAnd()
    while (this.peek().kind === '||') {
      this.next()
      left = { op: 'or', left, right: this.parseAnd() }
    }
    return left
  }

  private parseAnd(): SelectorNode {
    let left = this.parseUnary()
    while (this.peek().kind === '&&') {
      this.next()
      left = { op: 'and', left, right: this.parseUnary() }
    }
    return left
  }

  private parseUnary(): SelectorNode {
    if (this.peek().kind === '!') {
      this.next()
      return { op: 'not', expr: this.parseUnary() }
    }
    return this.parsePrimary()
  }

  private parsePrimary(): SelectorNode {
    const t = this.next()
    switch (t.kind) {
      case 'all':
        return { op: 'all' }
      case 'global':
        return { op: 'global' }
      case 'has':
        return { op: 'has', key: t.value }
      case '(': {
        const inner = this.parseOr()
        this.expect(')', "')'")
        return inner
      }
      case 'label':
        return this.parseComparison(t.value)
      default:
        return this.fail(t, `expected a label, has(), all(), '!' or '(', found ${describe(t)}`)
    }
  }

  private parseComparison(key: string): SelectorNode {
    const op = this.next()
    switch (op.kind) {
      case '==':
      case '!=':
      case 'contains':
      case 'starts with':
      case 'ends with': {
        const value = this.expect('string', 'a quoted string').value
        const kind = ({ '==': 'eq', '!=': 'ne', contains: 'contains', 'starts with': 'startsWith', 'ends with': 'endsWith' } as const)[op.kind]
        return { op: kind, key, value }
      }
      case 'in':
      case 'not in':
        return { op: op.kind === 'in' ? 'in' : 'notIn', key, values: this.parseSet() }
      default:
        return this.fail(op, `expected an operator after label '${key}'`)
    }
  }

  private parseSet(): string[] {
    this.expect('{', "'{'")
    const values: string[] = []
    if (this.peek().kind === '}') {
      this.next()
      return values
    }
    for (;;) {
      values.push(this.expect('string', 'a quoted string').value)
      const t = this.next()
      if (t.kind === '}') return values
      if (t.kind !== ',') this.fail(t, `expected ',' or '}', found ${describe(t)}`)
    }
  }
}

function describe(t: Token): string {
  if (t.kind === 'eof') return 'end of selector'
  if (t.kind === 'label') return `label '${t.value}'`
  if (t.kind === 'string') return `string ${JSON.stringify(t.value)}`
  return `'${t.kind}'`
}

export function evaluate(node: SelectorNode, labels: Labels, options: MatchOptions = {}): boolean {
  const has = (k: string): boolean => Object.prototype.hasOwnProperty.call(labels, k)
  switch (node.op) {
    case 'all':
      return true
    case 'global':
      return options.global ?? false
    case 'has':
      return has(node.key)
    case 'eq':
      return has(node.key) && labels[node.key] === node.value
    // Calico: a missing label satisfies "!=" and "not in".
    case 'ne':
      return !has(node.key) || labels[node.key] !== node.value
    case 'contains':
      return has(node.key) && (labels[node.key] ?? '').includes(node.value)
    case 'startsWith':
      return has(node.key) && (labels[node.key] ?? '').startsWith(node.value)
    case 'endsWith':
      return has(node.key) && (labels[node.key] ?? '').endsWith(node.value)
    case 'in':
      return has(node.key) && node.values.includes(labels[node.key] ?? '')
    case 'notIn':
      return !has(node.key) || !node.values.includes(labels[node.key] ?? '')
    case 'not':
      return !evaluate(node.expr, labels, options)
    case 'and':
      return evaluate(node.left, labels, options) && evaluate(node.right, labels, options)
    case 'or':
      return evaluate(node.left, labels, options) || evaluate(node.right, labels, options)
    default: {
      const never: never = node
      throw new Error(`unknown selector node ${JSON.stringify(never)}`)
    }
  }
}

/** Parses a selector once; throws SelectorError naming the character offset of the fault. */
export function parseSelector(source: string): Selector {
  const ast = new Parser(source, tokenize(source)).parse()
  return { source, ast, matches: (labels, options) => evaluate(ast, labels, options) }
}

/** Whether the selector uses global() anywhere (Calico allows it only in some fields). */
export function usesGlobal(node: SelectorNode): boolean {
  switch (node.op) {
    case 'global':
      return true
    case 'not':
      return usesGlobal(node.expr)
    case 'and':
    case 'or':
      return usesGlobal(node.left) || usesGlobal(node.right)
    default:
      return false
  }
}
