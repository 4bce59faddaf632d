// BFD as a client of BGP sees it (RFC 5882 §4.1, §3.2): a session that was Up and goes Down stops the
// BGP session it watches, at once; Up again lets it start. Down because the peer said AdminDown is not
// a failure and leaves BGP alone; our own AdminDown (BFD turned off) releases the hold.

import type { BfdChange } from './session.js'

/** What a state change means for the BGP session: hold it down, let it run, or nothing. */
export function bgpVerdict(change: BfdChange): 'down' | 'up' | 'none' {
  if (change.to === 'Up' || change.to === 'AdminDown') return 'up'
  if (change.to === 'Down' && change.from === 'Up' && change.remoteState !== 'AdminDown') return 'down'
  return 'none'
}
