// RFC 6793 between 4-octet and 2-octet speakers: rebuilding the real AS path from AS_PATH and
// AS4_PATH on receipt (§4.2.3), and the AS_TRANS stand-ins on the way out (§4.2.2).

import { AS_TRANS, SegmentType } from './constants.js'
import type { AsPathSegment, MutablePathAttributes, PathAttributes } from './attributes.js'

/** RFC 4271 §9.1.2.2(a) counting: a set counts one, confederation segments count none. */
export function pathLength(path: readonly AsPathSegment[]): number {
  let n = 0
  for (const s of path) {
    if (s.type === SegmentType.AS_SEQUENCE) n += s.asns.length
    else if (s.type === SegmentType.AS_SET) n += 1
  }
  return n
}

/** The leading `count` ASes of a path, by the same counting, keeping segment structure. */
function leading(path: readonly AsPathSegment[], count: number): AsPathSegment[] {
  const out: AsPathSegment[] = []
  let left = count
  for (const s of path) {
    if (left <= 0) break
    if (s.type === SegmentType.AS_CONFED_SEQUENCE || s.type === SegmentType.AS_CONFED_SET) {
      out.push(s)
      continue
    }
    if (s.type === SegmentType.AS_SET) {
      out.push(s)
      left -= 1
      continue
    }
    const take = Math.min(left, s.asns.length)
    out.push({ type: s.type, asns: s.asns.slice(0, take) })
    left -= take
  }
  return out
}

/**
 * Attributes as a 4-octet speaker understands them, from what a 2-octet peer sent: AS4_PATH
 * merged into AS_PATH, AS4_AGGREGATOR into AGGREGATOR, both RFC 6793 attributes removed.
 */
export function reconcileAs4(attrs: PathAttributes): PathAttributes {
  if (attrs.as4Path === undefined && attrs.as4Aggregator === undefined) return attrs
  const out: MutablePathAttributes = { ...attrs }
  delete out.as4Path
  delete out.as4Aggregator
  // §4.2.3: an AGGREGATOR that is not AS_TRANS means a 2-octet speaker aggregated after the
  // 4-octet part of the path; AS4_AGGREGATOR and AS4_PATH are then both stale and ignored.
  if (attrs.aggregator !== undefined && attrs.aggregator.asn !== AS_TRANS) return out
  if (attrs.as4Aggregator !== undefined) out.aggregator = attrs.as4Aggregator
  const as4 = attrs.as4Path
  const as2 = attrs.asPath
  if (as4 === undefined || as2 === undefined) return out
  const n2 = pathLength(as2)
  const n4 = pathLength(as4)
  if (n2 < n4) return out // §4.2.3: AS4_PATH longer than AS_PATH is ignored
  out.asPath = [...leading(as2, n2 - n4), ...as4]
  return out
}

/**
 * Attributes ready for a 2-octet peer: where an AS needs four octets the encoder writes AS_TRANS,
 * and the real values travel in AS4_PATH / AS4_AGGREGATOR (without confederation segments).
 */
export function forTwoOctetPeer(attrs: PathAttributes): PathAttributes {
  const big = (asn: number): boolean => asn > 0xffff
  const out: MutablePathAttributes = { ...attrs }
  if (attrs.asPath?.some((s) => s.asns.some(big))) {
    out.as4Path = attrs.asPath.filter((s) => s.type === SegmentType.AS_SEQUENCE || s.type === SegmentType.AS_SET)
  } else delete out.as4Path
  if (attrs.aggregator !== undefined && big(attrs.aggregator.asn)) out.as4Aggregator = attrs.aggregator
  else delete out.as4Aggregator
  return out
}
