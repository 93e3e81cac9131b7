import { Logger } from '@nestjs/common';
import pRetry from 'p-retry';
import type { Clock } from '@oncegate/execution-journal';

/** An outcome waiting to be checked for a caller, and the event that brought it. */
interface LateCheck {
  readonly due: number;
  readonly causationId: string;
}

/** How often a check that failed (the store away, a conflict) is tried again before it is given up and logged. */
const CHECK_RETRIES = 4;

/**
 * The outcomes result delivery checks late, when the callers of new executions are shown to it only once they have
 * waited long (`DeliveryTracker.register(id, 'when_long')`). A caller's answer tells it that somebody was waiting:
 * `answered` drops the check. One nobody was answered with is checked `delayMs` after it arrived, by when a caller
 * still waiting is shown in the leases; `drain` checks what is left as each falls due, when the service stops. What
 * a process that dies still held is not checked: those executions stay `completed`, and a retry gets the stored result
 * as it would from `completed_result_not_delivered`.
 */
export class OutcomeChecks {
  /** By execution, in the order they fall due (one delay for all). */
  private readonly pending = new Map<string, LateCheck>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private draining = false;
  private readonly log = new Logger('result-delivery');

  constructor(
    private readonly check: (executionId: string, causationId: string) => Promise<void>,
    private readonly clock: Clock,
    private readonly delayMs: number,
  ) {}

  /** How many outcomes wait to be checked. */
  get size(): number {
    return this.pending.size;
  }

  add(executionId: string, causationId: string): void {
    this.pending.delete(executionId);
    this.pending.set(executionId, { due: this.clock.now().getTime() + this.delayMs, causationId });
    if (this.timer === undefined && this.running === undefined) this.schedule();
  }

  /** A caller was answered with the execution's outcome: nothing to check. */
  answered(executionId: string): void {
    this.pending.delete(executionId);
  }

  /** Checks every outcome still pending as it falls due. */
  async drain(): Promise<void> {
    this.draining = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    while (this.pending.size > 0) {
      const [, first] = this.pending.entries().next().value!;
      const wait = first.due - this.clock.now().getTime();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      await this.runDue();
    }
  }

  private schedule(): void {
    const first = this.pending.values().next();
    if (first.done === true || this.draining) return;
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
    for (const [executionId, late] of this.pending) {
      if (late.due > now) break;
      this.pending.delete(executionId);
      await pRetry(() => this.check(executionId, late.causationId), { retries: CHECK_RETRIES, minTimeout: 200 }).catch((error: unknown) =>
        this.log.error(`could not check whether a caller waited for ${executionId}: ${(error as Error).message}`),
      );
    }
  }
}
