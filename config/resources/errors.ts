// The error types of the resource model: one ResourceError per fault, naming its field path
// (e.g. `documents[1].spec.peerIP`) and, when the text came from YAML, the line; ResourceErrors
// carries every fault of a document set at once. Formatting only: no parsing or validation here.

export type PathSegment = string | number

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/

/** `['documents', 1, 'spec', 'peerIP']` -> `documents[1].spec.peerIP`; odd keys (label names) are quoted. */
export function formatPath(path: readonly PathSegment[]): string {
  let out = ''
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`
    else if (PLAIN_KEY.test(seg)) out += out === '' ? seg : `.${seg}`
    else out += `[${JSON.stringify(seg)}]`
  }
  return out
}

export class ResourceError extends Error {
  constructor(
    /** The field path, e.g. `documents[0].spec.cidr`. */
    readonly path: string,
    /** What is wrong, without the path. */
    readonly reason: string,
    /** 1-based line in the source text, when known. */
    readonly line?: number,
    /** The file or key the text came from, when known. */
    readonly source?: string,
  ) {
    super(`${source !== undefined ? `${source}: ` : ''}${path}${line !== undefined ? ` (line ${line})` : ''}: ${reason}`)
    this.name = 'ResourceError'
  }
}

/** Thrown by parseResources and decodeResource: all the faults found, in document order. */
export class ResourceErrors extends Error {
  constructor(readonly errors: readonly ResourceError[]) {
    super(
      errors.length === 1
        ? (errors[0]?.message ?? '')
        : `${errors.length} errors:\n${errors.map((e) => `  ${e.message}`).join('\n')}`,
    )
    this.name = 'ResourceErrors'
  }
}

/** Collects faults with their paths while a document is walked. */
export class Problems {
  readonly list: { path: PathSegment[]; reason: string }[] = []

  add(path: readonly PathSegment[], reason: string): void {
    this.list.push({ path: [...path], reason })
  }

  get count(): number {
    return this.list.length
  }
}
