import type { ExecutionId, ExecutionState } from '@oncegate/domain';
import type { ProgressReport } from './channel-definition';

/** At most one report a second is written per attempt: the journal keeps the latest, not every tick of the target. */
export const PROGRESS_INTERVAL_MS = 1_000;

/** Writes one report for the attempt, if it is still the one in flight; the caller swallows a failure. */
export type WriteProgress = (executionId: ExecutionId, attempt: number, report: { progress: number; total: number | null; message: string | null }) => Promise<unknown>;

/**
 * The `progress` of one attempt: the first report is written at once, then the latest one a second; reports that
 * do not move forward or make no sense (a negative or non-finite number, a total below the progress) are dropped,
 * and nothing is written once the attempt's send resolved (`stop`). Writing never blocks the channel.
 */
export class AttemptProgress {
  private pending: { progress: number; total: number | null; message: string | null } | undefined;
  private last: number | undefined;
  private lastWrittenAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly state: Pick<ExecutionState, 'executionId' | 'attempts'>,
    private readonly write: WriteProgress,
    private readonly hide: (text: string) => string,
    private readonly warn: (message: string) => void,
  ) {}

  /** The channel's `attempt.progress`. */
  readonly report = (report: ProgressReport): void => {
    if (this.stopped || typeof report !== 'object' || report === null) return;
    const { progress, total, message } = report;
    if (typeof progress !== 'number' || !Number.isFinite(progress) || progress < 0) return;
    if (this.last !== undefined && progress <= this.last) return;
    const totalOk = typeof total === 'number' && Number.isFinite(total) && total >= progress;
    this.last = progress;
    this.pending = {
      progress,
      total: totalOk ? total : null,
      message: typeof message === 'string' && message.trim() !== '' ? this.hide(message).slice(0, 200) : null,
    };
    const wait = this.lastWrittenAt + PROGRESS_INTERVAL_MS - Date.now();
    if (wait <= 0) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), wait).unref();
  };

  /** No report is written after the attempt's send resolved; one being written is awaited, so the outcome follows it. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.pending = undefined;
    await this.writing;
  }

  private flush(): void {
    this.timer = undefined;
    const report = this.pending;
    if (report === undefined || this.stopped) return;
    this.pending = undefined;
    this.lastWrittenAt = Date.now();
    const { executionId, attempts } = this.state;
    this.writing = this.writing
      .then(() => this.write(executionId!, attempts, report))
      .then(
        () => undefined,
        (error: unknown) => this.warn(`${executionId}: the progress of attempt ${attempts} was not recorded: ${(error as Error).message}`),
      );
  }
}
