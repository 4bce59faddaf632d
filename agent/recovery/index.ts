// Recovery of a pod's CNI ADD and DEL, the agent's one mechanism for it (docs/architecture/recovery.md):
// every step whose outcome a crash or an unreachable datastore could leave unknown is a record in one
// append-only journal (journal.ts; each record a versioned JSON line per pending ADD, assign or release,
// closed by `done`), written before the step and replayed at start (pod-recovery.ts). The IPAM service and
// the CNI channel call it at each step; it owns no allocation and no wiring of its own beyond undoing an
// ADD. The record's format is cni/recovery-record.ts: the plugin writes it too, and cni/ stands below agent/.
//
// Three parts stay apart, for a reason each:
// - The plugin's owed releases (cni/release-spool.ts, one file per handle beside the socket): the plugin
//   notes them while the agent is dead, knows only the socket's path, and runs as many processes at once.
//   Each note is one record of the journal's format, and the agent takes them into its journal at start.
// - A deleted node's clean-up (deleted-nodes.ts): its agent and journal are gone with it, so the datastore's
//   blocks naming it are the record, read when its Node resource goes.
// - The node repair (node-repair.ts): the backstop for what no record covers (a machine crash takes records
//   never flushed, the journal being unsynced), found in the datastore after a grace period.

export { PodRecovery, type PodRecoveryOptions, JOURNAL_FILE } from './pod-recovery.js'
export type { AddEntry } from './cni-adds.js'
export { NodeIpamRepair, type NodeRepairOptions, type RepairKind } from './node-repair.js'
export { deletedNodes, releaseDeletedNodes } from './deleted-nodes.js'
export { JOURNAL_VERSION, JournalError, type JournalRecord, type PendingRecord, type ReleaseCause, decodeRecord, encodeRecord, openRecords, parseJournal } from '../../cni/index.js'
