interface Queued<T> {
  readonly item: T;
  /** Still waiting for company (a deferrable item whose signal, if any, has not aborted). */
  deferrable: boolean;
  /** Taken into a write: a signal aborting now changes nothing. */
  taken?: true;
}

/**
 * Whether an append made with this `AppendOptions.deferrable` is held for company now: `true`, or a signal that has not
 * aborted yet.
 */
export function holdsForCompany(deferrable: boolean | AbortSignal): boolean {
  return deferrable === true || (deferrable !== false && !deferrable.aborted);
}

/** How long an item that may wait is held for company, when nothing else is queued or being written. */
export const DEFERRED_WAIT_MS = 20;

/**
 * Group commit for a store that writes over a connection: one write at a time per store object, and the items queued
 * while one is written share the next (at most `maxGroup` of them). The first write waits for the turn of the event
 * loop to end, so the items queued in one turn share it; the loop ends in the same turn that finds nothing queued, so
 * an item is never left behind.
 *
 * An item added as `deferrable` (nothing waits for it promptly) does not start a write of its own: it is written with
 * the next item that does, or, when none comes, once it has waited `deferredWaitMs`. Added with a signal instead of
 * `true`, it waits so until the signal aborts (something now waits for it), and is then written at once.
 */
export class GroupCommit<T> {
  private queued: Queued<T>[] = [];
  /** How many queued items are not deferrable: while none is, only the timer (or a drain) starts a write. */
  private prompt = 0;
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The deferred items waited long enough (or a drain came): they are written even alone. */
  private due = false;

  /** `write` settles each item of its group itself and never rejects. */
  constructor(
    private readonly maxGroup: number,
    private readonly write: (group: readonly T[]) => Promise<void>,
    private readonly deferredWaitMs = DEFERRED_WAIT_MS,
  ) {}

  add(item: T, deferrable: boolean | AbortSignal = false): void {
    const waits = holdsForCompany(deferrable);
    const queued: Queued<T> = { item, deferrable: waits };
    this.queued.push(queued);
    if (!waits) this.prompt += 1;
    else if (deferrable instanceof AbortSignal) deferrable.addEventListener('abort', () => this.hurry(queued), { once: true });
    if (this.writing !== undefined) return;
    if (this.prompt === 0 && !this.due) this.waitForCompany();
    else this.start(false);
  }

  /** A deferred item's signal aborted: if it still waits in the queue, it is written now, like an item that may not wait. */
  private hurry(queued: Queued<T>): void {
    if (!queued.deferrable || queued.taken) return;
    queued.deferrable = false;
    this.prompt += 1;
    if (this.writing === undefined) this.start(false);
  }

  /** Resolves once everything queued so far is written, deferred items included (they are written now). */
  async drained(): Promise<void> {
    if (this.queued.length > 0) this.start(true);
    await this.writing;
  }

  /** Only deferred items are queued: they are written with the next item added, or after `deferredWaitMs`. */
  private waitForCompany(): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.start(true);
    }, this.deferredWaitMs);
  }

  private start(due: boolean): void {
    if (due) this.due = true;
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.writing ??= this.loop();
  }

  private async loop(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    for (;;) {
      if (this.queued.length === 0 || (this.prompt === 0 && !this.due)) {
        this.writing = undefined;
        this.due = false;
        if (this.queued.length > 0) this.waitForCompany();
        return;
      }
      const group = this.queued.splice(0, this.maxGroup);
      for (const queued of group) {
        queued.taken = true;
        if (!queued.deferrable) this.prompt -= 1;
      }
      await this.write(group.map(({ item }) => item));
    }
  }
}
