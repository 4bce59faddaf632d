// Interned path-attribute sets: the RIB keeps one copy per distinct set. The key is the canonical
// wire encoding (4-octet ASes, canonical order) plus the MP next hop, so equal sets have equal keys
// and, once interned, compare equal by identity.

import { Writer } from './buffer.js'
import { encodeAttributes, type PathAttributes } from './attributes.js'

const CANONICAL = { as4: true } as const
const scratch = new Writer(4096)

/** The canonical key of an attribute set and the next hops that go with it. */
export function attributesKey(attrs: PathAttributes, nextHop?: readonly string[]): string {
  scratch.pos = 0
  encodeAttributes(scratch, attrs, CANONICAL)
  const key = scratch.buf.toString('latin1', 0, scratch.pos)
  return nextHop && nextHop.length > 0 ? `${key}|${nextHop.join(',')}` : key
}

export interface InternedAttributes {
  readonly id: number
  readonly key: string
  readonly attrs: PathAttributes
  readonly nextHop: readonly string[]
  /** How many routes hold this set; the interner forgets it at zero. */
  refs: number
}

export class AttributeInterner {
  private readonly byKey = new Map<string, InternedAttributes>()
  private nextId = 1

  get size(): number {
    return this.byKey.size
  }

  /** The one shared copy of this set, its reference count raised by one. */
  intern(attrs: PathAttributes, nextHop: readonly string[] = []): InternedAttributes {
    const key = attributesKey(attrs, nextHop)
    let entry = this.byKey.get(key)
    if (entry === undefined) {
      entry = { id: this.nextId++, key, attrs: Object.freeze({ ...attrs }), nextHop: Object.freeze([...nextHop]), refs: 0 }
      this.byKey.set(key, entry)
    }
    entry.refs++
    return entry
  }

  release(entry: InternedAttributes): void {
    if (--entry.refs <= 0) this.byKey.delete(entry.key)
  }
}
