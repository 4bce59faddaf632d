// Kernel operations on learned routes, kept as columns: what a table arriving asks the kernel to do (replace
// or delete, the prefix as numbers, the metric, the next hops the renderer shares between routes), a batch
// at a time, with no route object, prefix text or key per route. The writer reads each operation through
// one reused route value; an operation becomes a RouteOp of its own only where one is reported or handed
// to `ip`. Pure storage.

import { formatIpv4, formatIpv6, type Family } from '../net/index.js'
import { routeKey, type KernelRoute, type NextHop, type RouteType } from './kernel-route.js'
import type { RouteOp } from './route-diff.js'

/** The operations a write takes: RouteOps, or learned routes' as columns (LearnedOps). */
export interface WriteOps {
  readonly length: number
  isDelete(i: number): boolean
  /** Operation i's route: the same object from call to call, valid until the next call (see op()). */
  route(i: number): KernelRoute
  /** Operation i as a RouteOp of its own. */
  op(i: number): RouteOp
}

/** A list of RouteOps as WriteOps. */
export class RouteOpList implements WriteOps {
  constructor(readonly ops: readonly RouteOp[]) {}

  get length(): number {
    return this.ops.length
  }

  isDelete(i: number): boolean {
    return (this.ops[i] as RouteOp).op === 'delete'
  }

  route(i: number): KernelRoute {
    return (this.ops[i] as RouteOp).route
  }

  op(i: number): RouteOp {
    return this.ops[i] as RouteOp
  }
}

/** The route value LearnedOps.route() fills in for each operation in turn. */
interface RouteView {
  family: Family
  table: number
  dst: string
  tos: number
  metric: number
  type: RouteType
  protocol: number
  nexthops: readonly NextHop[]
  dst4: number | undefined
  dst6: Uint8Array | undefined
  dstLen: number
}

/** `to` holding `from`'s values first. */
function grown<T extends Uint8Array | Uint32Array | Float64Array>(from: T, to: T): T {
  to.set(from)
  return to
}

const DELETE = 1
const IPV6 = 2
const NO_HOPS: readonly NextHop[] = []

export class LearnedOps implements WriteOps {
  length = 0
  /** How many of the operations are deletes. */
  deletes = 0
  private kinds: Uint8Array
  private addr4s: Uint32Array
  private addr6s: Uint8Array
  private lens: Uint8Array
  private metrics: Float64Array
  private hops: (readonly NextHop[])[] = []
  private readonly view: RouteView
  /** The view's IPv6 address. */
  private readonly addr6 = new Uint8Array(16)

  constructor(
    readonly table: number,
    readonly protocol: number,
    capacity = 1024,
  ) {
    this.kinds = new Uint8Array(capacity)
    this.addr4s = new Uint32Array(capacity)
    this.addr6s = new Uint8Array(capacity * 16)
    this.lens = new Uint8Array(capacity)
    this.metrics = new Float64Array(capacity)
    this.view = { family: 4, table, dst: '', tos: 0, metric: 0, type: 'unicast', protocol, nexthops: NO_HOPS, dst4: 0, dst6: undefined, dstLen: 0 }
  }

  /** Empties the list (its storage is kept for the next batch; the hop lists it names are shared ones). */
  reset(): void {
    this.length = 0
    this.deletes = 0
  }

  /** Appends a replace (the route as rendered) or a delete (the route felix wrote there) of a unicast route. */
  push(del: boolean, family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, metric: number, hops: readonly NextHop[]): void {
    const i = this.length
    if (i === this.kinds.length) this.grow()
    this.kinds[i] = (del ? DELETE : 0) | (family === 6 ? IPV6 : 0)
    if (family === 6) this.addr6s.set(addr6!.length === 16 ? addr6! : addr6!.subarray(0, 16), i * 16)
    else this.addr4s[i] = addr4
    this.lens[i] = len
    this.metrics[i] = metric
    this.hops[i] = hops
    this.length = i + 1
    if (del) this.deletes++
  }

  private grow(): void {
    const n = this.kinds.length * 2
    this.kinds = grown(this.kinds, new Uint8Array(n))
    this.addr4s = grown(this.addr4s, new Uint32Array(n))
    this.addr6s = grown(this.addr6s, new Uint8Array(n * 16))
    this.lens = grown(this.lens, new Uint8Array(n))
    this.metrics = grown(this.metrics, new Float64Array(n))
  }

  isDelete(i: number): boolean {
    return ((this.kinds[i] as number) & DELETE) !== 0
  }

  /** Operation i's route without its prefix text (`dst` is empty: the writer takes the numbers). */
  route(i: number): KernelRoute {
    const v = this.view
    const family: Family = ((this.kinds[i] as number) & IPV6) !== 0 ? 6 : 4
    v.family = family
    v.dstLen = this.lens[i] as number
    v.metric = this.metrics[i] as number
    v.nexthops = this.hops[i] as readonly NextHop[]
    if (family === 4) {
      v.dst4 = this.addr4s[i]
      v.dst6 = undefined
    } else {
      v.dst4 = undefined
      const a = this.addr6
      for (let k = 0, at = i * 16; k < 16; k++) a[k] = this.addr6s[at + k] as number
      v.dst6 = a
    }
    return v
  }

  op(i: number): RouteOp {
    const v = this.route(i)
    const dst = v.family === 4 ? `${formatIpv4(v.dst4!)}/${v.dstLen}` : `${formatIpv6(v.dst6!)}/${v.dstLen}`
    const base = { family: v.family, table: this.table, dst, tos: 0, metric: v.metric, type: 'unicast', protocol: this.protocol, nexthops: v.nexthops, dstLen: v.dstLen } as const
    const route: KernelRoute = v.family === 4 ? { ...base, dst4: v.dst4 } : { ...base, dst6: v.dst6!.slice() }
    const del = this.isDelete(i)
    return { op: del ? 'delete' : 'replace', route, key: routeKey(route), reason: del ? 'stale' : 'missing' }
  }
}
