/**
 * Group commit for a store that writes over a connection: one write at a time per store object, and the items queued
 * while one is written share the next (at most `maxGroup` of them). The first write waits for the turn of the event
 * loop to end, so the items queued in one turn share it; the loop ends in the same turn that finds nothing queued, so
 * an item is never left behind.
 */
export class GroupCommit<T> {
  private queued: T[] = [];
  private writing: Promise<void> | undefined;

  /** `write` settles each item of its group itself and never rejects. */
  constructor(
    private readonly maxGroup: number,
    private readonly write: (group: readonly T[]) => Promise<void>,
  ) {}

  add(item: T): void {
    this.queued.push(item);
    this.writing ??= this.loop();
  }

  /** Resolves once everything queued so far is written. */
  async drained(): Promise<void> {
    await this.writing;
  }

  private async loop(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    for (;;) {
      if (this.queued.length === 0) {
        this.writing = undefined;
        return;
      }
      await this.write(this.queued.splice(0, this.maxGroup));
    }
  }
}
