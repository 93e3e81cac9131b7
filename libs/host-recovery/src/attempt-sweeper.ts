import { Logger } from '@nestjs/common';
import { nextRecoveryStep, type AttemptOwner, type ExecutionId, type UnknownOutcomeReason } from '@oncegate/domain';
import { readAllFrom, type EventStore } from '@oncegate/event-store';
import { isoNow, loadExecution, runExecutionCommand, type Clock } from '@oncegate/execution-journal';
import { ownerOf } from './instance-leases';

export interface AttemptSweeperOptions {
  readonly store: EventStore;
  readonly clock: Clock;
  /** Dispatcher ids of this process: their attempts have a live owner while it runs. */
  readonly ownDispatcherIds: ReadonlySet<string>;
  /** Where the instances' lock files are (`<data dir>/instances`); without it only leases tell. */
  readonly locksDir?: string;
  /** How often it looks again after the look at start. */
  readonly everyMs: number;
}

/** An attempt the sweeper recorded as unknown. */
export interface SettledAttempt {
  readonly executionId: ExecutionId;
  readonly attempt: number;
  readonly reason: UnknownOutcomeReason;
}

/** Where the sweep resumes after a restart: everything before it was settled when it was stored. */
const LOW_WATER = 'attempt-sweeper/unsettled-low-water';
const PAGE = 1000;
/** The events that move an execution out of `dispatched`, whatever its attempt. */
const OUTCOMES = ['OutcomeObserved', 'OutcomeUnknown'] as const;

/**
 * Settles attempts that will never report, whoever dispatched them: one whose dispatcher is gone (its liveness
 * lease expired, was released or never held) and one past its deadline are recorded as `OutcomeUnknown` —
 * `dispatcher_lost` or `attempt_deadline_passed` — by the pure rule `nextRecoveryStep`. Recovery by class then
 * takes over from that event as after any unknown outcome. The sweeper itself never sends anything.
 *
 * It looks at start and every `everyMs`: the `Dispatched` events appended since the last look are read once, with
 * the outcomes (`OutcomeObserved`, `OutcomeUnknown`) appended since; an execution whose latest `Dispatched` is
 * followed by an outcome is no longer dispatched (every outcome folds away from `dispatched`), so only the rest are
 * loaded and kept as candidates until they settle. Under load nearly every attempt reports before the next look,
 * and is never read on its own.
 */
export class AttemptSweeper {
  private readonly log = new Logger('attempt-sweeper');
  /** Executions dispatched at the last look, with the global position of their latest `Dispatched`. */
  private readonly candidates = new Map<ExecutionId, number>();
  private scannedTo: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<readonly SettledAttempt[]> | undefined;

  constructor(private readonly options: AttemptSweeperOptions) {}

  /** Looks once (awaited), then every `everyMs` until stopped. */
  async start(): Promise<void> {
    await this.sweep();
    this.timer = setInterval(() => {
      this.sweep().catch((error: unknown) => this.log.error(`sweeping dispatched attempts failed: ${(error as Error).message}`));
    }, this.options.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping?.catch(() => undefined);
  }

  /** One look; a look already running is joined, not doubled. Resolves with what it settled. */
  sweep(): Promise<readonly SettledAttempt[]> {
    this.sweeping ??= this.look().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async look(): Promise<readonly SettledAttempt[]> {
    const { store, clock, ownDispatcherIds } = this.options;
    await this.readNewDispatches();
    const settled: SettledAttempt[] = [];
    const owners = new Map<string, AttemptOwner>();
    for (const executionId of [...this.candidates.keys()]) {
      const { state } = await loadExecution(store, executionId);
      if (state.status !== 'dispatched') {
        this.candidates.delete(executionId);
        continue;
      }
      const now = clock.now();
      const dispatcherId = state.lastDispatch?.dispatcherId ?? '';
      let owner = owners.get(dispatcherId);
      if (owner === undefined) {
        owner = ownDispatcherIds.has(dispatcherId) ? 'alive' : await ownerOf(store, dispatcherId, now, this.options.locksDir);
        owners.set(dispatcherId, owner);
      }
      const step = nextRecoveryStep(state, isoNow(clock), owner);
      if (step.kind !== 'record_unknown_outcome') continue;
      const { attempt, reason } = step;
      const outcome = await runExecutionCommand(
        store,
        executionId,
        (s) =>
          s.status === 'dispatched' && s.attempts === attempt
            ? { type: 'RecordUnknownOutcome', executionId, now: isoNow(clock), attempt, reason }
            : undefined,
        { actor: 'service:attempt-sweeper' },
        clock,
      );
      this.candidates.delete(executionId);
      if (outcome.appended.length === 0) continue;
      this.log.warn(`${executionId}: attempt ${attempt} (by ${dispatcherId}) will not report: outcome unknown (${reason})`);
      settled.push({ executionId, attempt, reason });
    }
    await this.storeLowWater();
    return settled;
  }

  /**
   * Adds the executions of every `Dispatched` appended since the last look, and drops those an outcome followed
   * (events of one execution are read in its stream's order).
   */
  private async readNewDispatches(): Promise<void> {
    const { store } = this.options;
    const after = (this.scannedTo ??= (await store.readCheckpoint(LOW_WATER)) ?? 0);
    const events = readAllFrom(store, { after, pageSize: PAGE, filter: { eventTypes: ['Dispatched', ...OUTCOMES] } });
    for await (const event of events) {
      const executionId = event.metadata['executionId'] as ExecutionId | undefined;
      if (executionId === undefined) continue;
      if (event.type === 'Dispatched') this.candidates.set(executionId, event.position);
      else this.candidates.delete(executionId);
    }
    this.scannedTo = events.position;
  }

  /** Below the oldest candidate, every `Dispatched` has settled: a restart reads on from there. */
  private async storeLowWater(): Promise<void> {
    let lowWater = this.scannedTo!;
    for (const position of this.candidates.values()) lowWater = Math.min(lowWater, position - 1);
    await this.options.store.storeCheckpoint(LOW_WATER, lowWater);
  }
}
