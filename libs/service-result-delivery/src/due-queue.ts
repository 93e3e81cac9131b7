import type { Clock } from '@oncegate/execution-journal';

/**
 * Work that falls due one fixed delay after it was added, by key, handed to `onDue` in the order it falls due (one
 * at a time) by a single timer that does not hold the process: the callers a front shows once they have waited long,
 * and the outcomes result delivery checks once nobody was answered with them. Adding a key again moves it to the end;
 * a key deleted before it falls due is never handed over.
 */
export class DueQueue<V> {
  /** By key, in the order they fall due (one delay for all). */
  private readonly pending = new Map<string, { readonly due: number; readonly value: V }>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly delayMs: number,
    private readonly clock: Clock,
    private readonly onDue: (key: string, value: V) => Promise<void> | void,
  ) {}

  /** How many wait to fall due. */
  get size(): number {
    return this.pending.size;
  }

  add(key: string, value: V): void {
    this.pending.delete(key);
    this.pending.set(key, { due: this.clock.now().getTime() + this.delayMs, value });
    if (this.timer === undefined && this.running === undefined) this.schedule();
  }

  delete(key: string): void {
    this.pending.delete(key);
  }

  /** Hands over everything still pending as each falls due, then takes nothing more. */
  async drain(): Promise<void> {
    this.stop();
    await this.running;
    while (this.pending.size > 0) {
      const [, first] = this.pending.entries().next().value!;
      const wait = first.due - this.clock.now().getTime();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      await this.runDue();
    }
  }

  /** Stops the timer: what is pending stays until `drain`, or is let go. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    const first = this.pending.values().next();
    if (first.done === true || this.stopped) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.running = this.runDue().finally(() => {
          this.running = undefined;
          this.schedule();
        });
      },
      Math.max(0, first.value.due - this.clock.now().getTime()),
    );
    this.timer.unref();
  }

  private async runDue(): Promise<void> {
    const now = this.clock.now().getTime();
    for (const [key, { due, value }] of this.pending) {
      if (due > now) break;
      this.pending.delete(key);
      await this.onDue(key, value);
    }
  }
}
