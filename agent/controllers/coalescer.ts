// The one way a controller of pinto-node runs its work: at most one run at a time, calls during a run
// coalesced into one more run after it, errors logged by the owner and never thrown into the caller.

/** Runs `fn` at most once at a time; calls during a run coalesce into one more run. */
export class Coalescer {
  private running: Promise<void> | undefined
  private again = false

  constructor(
    private readonly fn: () => Promise<void>,
    private readonly onError: (err: Error) => void,
  ) {}

  trigger(): void {
    if (this.running) {
      this.again = true
      return
    }
    this.running = (async () => {
      do {
        this.again = false
        await this.fn().catch(this.onError)
      } while (this.again)
    })().finally(() => {
      this.running = undefined
    })
  }

  /** Resolves once no run is going and none is due. */
  async idle(): Promise<void> {
    while (this.running) await this.running
  }
}
