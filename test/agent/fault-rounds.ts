// The datastore faults the fault tests inject in the middle of a burst of ADDs (etcd's, and the kube-apiserver's
// on the kubernetes datastore): frozen past the agent's request deadline and resumed, killed and started again at
// once, or killed and left down past the deadline first. The rounds and the fault, not the checks around them.

/** A datastore process the harness can stop and resume, or kill and start again on its data. */
export interface Faultable {
  freeze(): void
  thaw(): void
  crash(): Promise<void>
  restart(): Promise<void>
}

export type Fault = 'freeze' | 'crash' | 'crash-down'

/**
 * Longer than the agent's request deadline (3.5 s, and etcd's 0.5 s connect), so writes it gave up on may land
 * after; shorter than an ADD's own deadline on the kubernetes datastore (20 s), which a frozen apiserver delays.
 */
export const FREEZE_MS = 4300

/** The fault of each round, once this many host veths of the burst exist (ADDs under way). */
export const FAULT_ROUNDS: readonly { readonly fault: Fault; readonly atVeths: number }[] = [
  { fault: 'freeze', atVeths: 1 },
  { fault: 'crash-down', atVeths: 5 },
  { fault: 'freeze', atVeths: 10 },
  { fault: 'crash', atVeths: 15 },
]

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Injects `fault` and returns once the datastore is back (a restart waits until it answers). */
export async function injectFault(target: Faultable, fault: Fault): Promise<void> {
  if (fault === 'freeze') {
    target.freeze()
    // The fault's length, not a wait for a condition: the agent's requests must time out while it lasts.
    await pause(FREEZE_MS)
    target.thaw()
    return
  }
  await target.crash()
  // 'crash-down' stays down past the agent's deadline; 'crash' is back at once (unacknowledged writes may or may not survive).
  if (fault === 'crash-down') await pause(FREEZE_MS)
  await target.restart()
}
