// A peer's routes as received, after validation and before import policy (BIRD's `import table`), so an
// import-policy change can re-run import for a session without route refresh. Prefixes and interned sets
// only (IPv4 without path id as columns, others in a Map); it decides nothing and never touches the Loc-RIB.

import { attributesEqual, type AttributeInterner, type InternedAttributes } from '../codec/intern.js'
import type { PathAttributes } from '../codec/attributes.js'
import { ipv4Prefix, type Prefix } from '../codec/nlri.js'
import { grown, Ipv4Index } from '../../net/index.js'

/** What re-running import does to one prefix: the verdict held in the Adj-RIB-In against the new one. */
export type ReimportOp = 'keep' | 'announce' | 'withdraw' | 'update'

/**
 * The RIB operation for one prefix when import runs again: `held` is what the Adj-RIB-In has from the peer
 * (undefined: nothing, the old policy rejected it), `next` the new policy's verdict (undefined: rejected).
 */
export function reimportOp(held: PathAttributes | undefined, next: PathAttributes | undefined): ReimportOp {
  if (next === undefined) return held === undefined ? 'keep' : 'withdraw'
  if (held === undefined) return 'announce'
  return attributesEqual(held, next) ? 'keep' : 'update'
}

function otherKey(p: Prefix): string {
  let key = `${p.afi}/${p.len}/${p.pathId}/`
  const nb = (p.len + 7) >> 3
  if (p.afi === 1) return key + p.addr
  for (let i = 0; i < nb; i++) key += String.fromCharCode(p.addr[i]!)
  return key
}

export class ImportTable {
  /** The IPv4 network address by slot (as int32): the indices read their keys back from here. */
  addr4 = new Int32Array(1024)
  private lens = new Uint8Array(1024)
  /** The attribute set's interner id by slot; 0 for a free slot. */
  private ids = new Int32Array(1024)
  private end = 0
  private readonly free: number[] = []
  private readonly v4 = new Array<Ipv4Index | undefined>(33).fill(undefined)
  private readonly others = new Map<string, { readonly prefix: Prefix; attrs: InternedAttributes }>()
  private count = 0

  /** `interner`: where the sets come from; the table holds one reference per prefix. */
  constructor(private readonly interner: AttributeInterner) {}

  get size(): number {
    return this.count
  }

  /** `p` as received with `attrs` (the caller's reference; the table takes its own). */
  set(p: Prefix, attrs: InternedAttributes): void {
    attrs.refs++
    if (p.afi !== 1 || p.pathId !== 0) {
      const key = otherKey(p)
      const held = this.others.get(key)
      if (held !== undefined) {
        this.interner.release(held.attrs)
        held.attrs = attrs
      } else {
        this.others.set(key, { prefix: p, attrs })
        this.count++
      }
      return
    }
    const next = this.take()
    const m = (this.v4[p.len] ??= new Ipv4Index(this, p.len))
    const s = m.obtain(p.addr, next)
    if (s === next) {
      this.addr4[s] = p.addr | 0
      this.lens[s] = p.len
      if (s === this.end) this.end++
      else this.free.pop()
      this.count++
    } else this.interner.release(this.interner.get(this.ids[s]!)!)
    this.ids[s] = attrs.id
  }

  /** `p` withdrawn (or refused). */
  delete(p: Prefix): void {
    if (p.afi !== 1 || p.pathId !== 0) {
      const key = otherKey(p)
      const held = this.others.get(key)
      if (held === undefined) return
      this.others.delete(key)
      this.interner.release(held.attrs)
      this.count--
      return
    }
    const m = this.v4[p.len]
    const s = m === undefined ? -1 : m.get(p.addr)
    if (s < 0) return
    m!.delete(p.addr)
    this.interner.release(this.interner.get(this.ids[s]!)!)
    this.ids[s] = 0
    this.free.push(s)
    this.count--
  }

  /** The set held for `p`, or undefined. */
  get(p: Prefix): InternedAttributes | undefined {
    if (p.afi !== 1 || p.pathId !== 0) return this.others.get(otherKey(p))?.attrs
    const s = this.v4[p.len]?.get(p.addr) ?? -1
    return s < 0 ? undefined : this.interner.get(this.ids[s]!)
  }

  /** Calls `visit` with every prefix held (made as it is read) and its set; `visit` must not change the table. */
  forEach(visit: (p: Prefix, attrs: InternedAttributes) => void): void {
    const { ids, addr4, lens, interner } = this
    for (let s = 0; s < this.end; s++) {
      const id = ids[s]!
      if (id !== 0) visit(ipv4Prefix(addr4[s]! >>> 0, lens[s]!), interner.get(id)!)
    }
    for (const e of this.others.values()) visit(e.prefix, e.attrs)
  }

  /** Every prefix held with its set. */
  entries(): [Prefix, InternedAttributes][] {
    const out: [Prefix, InternedAttributes][] = []
    this.forEach((p, a) => out.push([p, a]))
    return out
  }

  /** Every prefix of address family `afi` (1 or 2) dropped. */
  dropAfi(afi: number): void {
    const gone: Prefix[] = []
    this.forEach((p) => {
      if (p.afi === afi) gone.push(p)
    })
    for (const p of gone) this.delete(p)
  }

  /** Everything dropped, every reference given back. */
  clear(): void {
    for (let s = 0; s < this.end; s++) {
      const id = this.ids[s]!
      if (id !== 0) this.interner.release(this.interner.get(id)!)
    }
    for (const e of this.others.values()) this.interner.release(e.attrs)
    this.others.clear()
    this.v4.fill(undefined)
    this.ids = new Int32Array(1024)
    this.addr4 = new Int32Array(1024)
    this.lens = new Uint8Array(1024)
    this.free.length = 0
    this.end = 0
    this.count = 0
  }

  /** The slot the next new prefix takes (the columns grown to hold it). */
  private take(): number {
    const next = this.free.length > 0 ? this.free[this.free.length - 1]! : this.end
    if (next === this.ids.length) {
      const size = next * (next < 1 << 20 ? 4 : 2)
      this.addr4 = grown(this.addr4, size, true)
      this.ids = grown(this.ids, size, true)
      this.lens = grown(this.lens, size)
    }
    return next
  }
}
