import { Logger } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { ToolContract } from '@oncegate/contracts';
import { awaitsLateReport, DomainError, earlierAttemptMayHaveActed, executionStream, type DefiniteOutcome, type ExecutionCommand, type ExecutionId, type ExecutionState, type UnknownOutcomeReason } from '@oncegate/domain';
import { backoffMs, EventStoreClosedError, type EventStore, type RecordedEvent } from '@oncegate/event-store';
import { executionAsOf, foldRecorded, isoNow, loadExecution, runExecutionCommand, stepTakenAlready, type Clock, type InlineStep, type LoadedExecution } from '@oncegate/execution-journal';
import { inSpan, processMetrics, SpanKind } from '@oncegate/host-operations';
import { recoverExecution, type MarkerFinding, type TaskResumption } from '@oncegate/host-recovery';
import type { SealedRef, SealedStore } from '@oncegate/sealed-store';
import { PreparedCalls, type PreparedCall, type StoredResult } from '@oncegate/service-host';
import type { DispatchRefusal } from './channel-definition';

/** The longest pause between two tries at recording an outcome. */
const RECORD_RETRY_MAX_MS = 2_000;
/** How long a stopping process keeps trying to record outcomes that the store refuses. */
const DRAIN_RECORD_GRACE_MS = 10_000;

/**
 * What a channel's attempt came to, in the journal's terms. `notSentReason` marks a failure in which nothing left
 * (recorded with source `not_sent`), told apart from a target that answered with a failure.
 */
export type AttemptRecord =
  | {
      readonly kind: 'observed';
      readonly outcome: DefiniteOutcome;
      readonly targetStatus: number | null;
      readonly exitCode: number | null;
      readonly result: StoredResult;
      readonly notSentReason?: string;
    }
  | { readonly kind: 'unknown'; readonly reason: UnknownOutcomeReason };

/**
 * What every channel dispatcher does alike: append `Dispatched` (durable, with the expected revision, so only
 * one instance wins) before anything leaves; record the outcome; recover by class after an unknown outcome.
 * Attempts that will never report (their dispatcher gone, or past their deadline) are settled by the
 * `AttemptSweeper`, whoever dispatched them. A channel supplies `attempt` (and, where it has them, a status
 * query or a marker probe).
 */
export abstract class ChannelDispatcher {
  protected readonly log: Logger;
  private readonly inFlight = new Set<Promise<void>>();
  /** Set once the process stops: recording an outcome is tried again only until then. */
  private giveUpRecordingAt: number | undefined;
  /** Attempts in flight at most before events wait (`dispatch_in_flight`); inline dispatches are not held. */
  private maxInFlight = Number.POSITIVE_INFINITY;
  /** Slots of the cap taken (a dispatch being decided, or an attempt in flight), and who waits for one. */
  private slotsTaken = 0;
  private readonly slotWaiters: Array<() => void> = [];

  protected constructor(
    protected readonly channel: string,
    protected readonly store: EventStore,
    protected readonly tools: ReadonlyMap<string, ToolContract>,
    protected readonly sealed: SealedStore,
    protected readonly dispatcherId: string,
    protected readonly clock: Clock,
    /** Arguments opened and requests rendered once per execution; shared with authorization when it runs here. */
    protected readonly prepared: PreparedCalls = new PreparedCalls(sealed),
  ) {
    this.log = new Logger(`dispatcher-${channel}`);
  }

  private get actor(): string {
    return `service:dispatcher-${this.channel}`;
  }

  /**
   * Folds the execution from its first event, reading nothing: the events are delivered in order, so when its
   * `ExecutionAuthorized` follows at the next revision the fold holds it, and the dispatch is decided without reading
   * the stream. A fold that cannot be extended (an event between them that this service does not take) is read then.
   * A call of this channel is prepared meanwhile (its arguments opened from the sealed store), so that its dispatch
   * waits for no read either; a denial forgets it, and the prepared calls are bounded all the same.
   */
  @EventPattern('ExecutionAccepted')
  onAccepted(@Payload() event: RecordedEvent): void {
    const state = foldRecorded(this.store, event.metadata['executionId'] as ExecutionId, event)?.state;
    if (state?.status !== 'accepted' || state.accepted?.channel !== this.channel) return;
    const tool = this.tools.get(state.accepted.toolName);
    // A call that cannot be prepared is not kept; its dispatch, if it comes, prepares it again and says why.
    if (tool !== undefined) void this.prepared.get(state, tool);
  }

  /** A denied call is never sent: what was prepared for it goes. */
  @EventPattern('ExecutionDenied')
  onDenied(@Payload() event: RecordedEvent): void {
    this.prepared.forget(event.metadata['executionId'] as ExecutionId);
  }

  /** The first attempt. */
  @EventPattern('ExecutionAuthorized')
  onAuthorized(@Payload() event: RecordedEvent): Promise<void> {
    return this.dispatch(event.metadata['executionId'] as ExecutionId, event);
  }

  /**
   * A new attempt after an operator resolved a review as not executed and asked for a resend (an irreversible call's
   * confirmed by a second operator): only then is the execution `authorized` by the resolution. A resolution alone
   * leaves it `not_executed`, and this sends nothing.
   */
  @EventPattern('ReviewResolved')
  onReviewResolved(@Payload() event: RecordedEvent): Promise<void> {
    return this.dispatch(event.metadata['executionId'] as ExecutionId, event);
  }

  /** Recovery by class: after an unknown outcome, after a retry (channels add the evidence events they produce). */
  @EventPattern('OutcomeUnknown')
  onOutcomeUnknown(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  /**
   * The agent's retry: recovery by class after an unknown outcome, or the next attempt of an execution a review found
   * not executed (its retry authorized it again; the first attempt of a call is sent from `ExecutionAuthorized`).
   */
  @EventPattern('RetryAttached')
  async onRetryAttached(@Payload() event: RecordedEvent): Promise<void> {
    const executionId = event.metadata['executionId'] as ExecutionId;
    await this.recover(event);
    await this.dispatch(executionId, event, 'authorized', (state) => state.attempts > 0);
  }

  /** Runs one attempt of the prepared call against the target; resolves with what came of it, never rejects. */
  protected abstract attempt(state: ExecutionState, call: PreparedCall): Promise<AttemptRecord>;

  /**
   * Checks what must hold before anything is sent (the vault unlocked, the credential bound to the real target),
   * before `Dispatched` is appended. A refusal of a first attempt is recorded as a denial; a recovery attempt is
   * simply not sent.
   */
  protected preflight?(state: ExecutionState, call: PreparedCall): Promise<DispatchRefusal | undefined>;

  protected queryStatus?(state: ExecutionState): Promise<{ preconditionHolds: boolean; observedStatus: string | null }>;
  protected probeMarker?(state: ExecutionState): Promise<MarkerFinding>;
  /** Resumes the current attempt's task at the target (any class), its result sealed when it gives one. */
  protected resumeTask?(state: ExecutionState): Promise<TaskResumption>;

  protected async recover(cause: RecordedEvent): Promise<void> {
    const executionId = cause.metadata['executionId'] as ExecutionId;
    // Another channel's execution: nothing to read.
    if (stepTakenAlready(this.store, executionId, cause, (s) => s.accepted?.channel === this.channel)) return;
    const { state } = await loadExecution(this.store, executionId);
    if (state.accepted?.channel !== this.channel) return;
    await recoverExecution(
      this.store,
      this.clock,
      executionId,
      cause,
      {
        redispatch: (_execution: LoadedExecution, retry: RecordedEvent) => this.dispatch(executionId, retry, 'outcome_unknown'),
        ...(this.queryStatus ? { queryStatus: (execution: LoadedExecution) => this.queryStatus!(execution.state) } : {}),
        ...(this.probeMarker ? { probeMarker: (execution: LoadedExecution) => this.probeMarker!(execution.state) } : {}),
        ...(this.resumeTask ? { resumeTask: (execution: LoadedExecution) => this.resumeTask!(execution.state) } : {}),
      },
      { actor: this.actor, causationId: cause.id },
    );
  }

  /**
   * Caps the attempts this instance has in flight (`dispatch_in_flight`): past it, the next event waits for one to
   * finish, so the instances of a consumer group share the load. Attempts dispatched inline are not counted.
   */
  limitInFlight(max: number): void {
    this.maxInFlight = max;
  }

  /**
   * Appends Dispatched (from `from`: `authorized` unless recovering; `also` narrows which states of it) and, once it
   * is durable, runs the attempt.
   */
  protected async dispatch(
    executionId: ExecutionId,
    cause: RecordedEvent,
    from: 'authorized' | 'outcome_unknown' = 'authorized',
    also: (state: ExecutionState) => boolean = () => true,
  ): Promise<void> {
    // Another channel's execution, or dispatched already (inline, in the commit that authorized it).
    if (stepTakenAlready(this.store, executionId, cause, (s) => this.takes(s, from) && also(s))) return;
    const { state } = await executionAsOf(this.store, executionId, cause);
    if (!also(state)) return;
    // The call is prepared and checked first; a slot is then taken before Dispatched is appended and held until the
    // attempt's outcome is recorded.
    if (await this.refused(state, cause, from)) return;
    await this.takeSlot();
    let started = false;
    try {
      const outcome = await runExecutionCommand(
        this.store,
        executionId,
        (state) => (this.takes(state, from) && also(state) ? this.dispatchCommand(state) : undefined),
        { actor: this.actor, causationId: cause.id, correlation: cause.metadata['correlation'] as never },
        this.clock,
        // The fold that holds the delivered event decides first; a stream that moved on makes the append conflict.
        { fromCacheAsOf: cause },
      );
      if (outcome.appended.length === 0) return;
      this.start(outcome.state, () => this.giveSlot(), outcome.revision);
      started = true;
    } finally {
      if (!started) this.giveSlot();
    }
  }

  private async takeSlot(): Promise<void> {
    while (this.slotsTaken >= this.maxInFlight) await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    this.slotsTaken += 1;
  }

  private giveSlot(): void {
    this.slotsTaken -= 1;
    this.slotWaiters.shift()?.();
  }

  private takes(state: ExecutionState, from: 'authorized' | 'outcome_unknown'): boolean {
    return state.accepted?.channel === this.channel && state.status === from;
  }

  private dispatchCommand(state: ExecutionState): ExecutionCommand {
    return { type: 'RecordDispatch', executionId: state.executionId!, now: isoNow(this.clock), dispatcherId: this.dispatcherId };
  }

  /**
   * Runs the attempt of a durable `Dispatched` of this dispatcher; `settled` once its outcome is recorded.
   * `dispatchedAt`: the revision of that `Dispatched` when this process's fold holds it (it appended it).
   */
  private start(state: ExecutionState, settled?: () => void, dispatchedAt?: number): void {
    const executionId = state.executionId!;
    // Not awaited: one slow target never holds up the events of other executions.
    const running = this.run(state, dispatchedAt)
      .catch((error: unknown) => this.log.error(`${executionId}: recording the outcome failed: ${(error as Error).message}`))
      .finally(settled);
    this.inFlight.add(running);
    void running.finally(() => this.inFlight.delete(running));
  }

  /**
   * The first dispatch, decided inline in the commit that accepts and authorizes the execution when this
   * dispatcher runs in the accepting process (docs/gateway.md, the pipeline): the preflight's refusal as a denial,
   * or `Dispatched`; the attempt starts once that commit is durable.
   */
  inlineStep(): InlineStep {
    return {
      actor: this.actor,
      decide: (state) => (this.takes(state, 'authorized') ? this.firstDispatch(state) : undefined),
      committed: (state) => {
        if (state.status === 'dispatched' && state.lastDispatch?.dispatcherId === this.dispatcherId) this.start(state);
        else if (state.status === 'denied') this.prepared.forget(state.executionId!);
      },
    };
  }

  /** The first dispatch of an authorized execution: the preflight's refusal as a denial, or `Dispatched`. */
  private async firstDispatch(state: ExecutionState): Promise<ExecutionCommand> {
    const refusal = await this.refusalOf(state);
    return refusal === undefined
      ? this.dispatchCommand(state)
      : { type: 'DenyExecution', executionId: state.executionId!, now: isoNow(this.clock), basis: refusal.basis, reason: refusal.reason };
  }

  /** Why the channel's preflight refuses to send this call, or `undefined`. */
  private async refusalOf(state: ExecutionState): Promise<DispatchRefusal | undefined> {
    if (this.preflight === undefined) return undefined;
    const tool = this.tools.get(state.accepted!.toolName);
    const call = tool === undefined ? undefined : await this.prepared.get(state, tool);
    // Without a tool or arguments, `run` records the definite failure.
    return call === undefined ? undefined : this.preflight(state, call);
  }

  /** Runs the channel's preflight; on a refusal records it (first attempt) or logs it (recovery). True when refused. */
  private async refused(state: ExecutionState, cause: RecordedEvent, from: 'authorized' | 'outcome_unknown'): Promise<boolean> {
    if (this.preflight === undefined || !this.takes(state, from)) return false;
    const executionId = state.executionId!;
    const refusal = await this.refusalOf(state);
    if (refusal === undefined) return false;
    this.prepared.forget(executionId);
    if (from === 'outcome_unknown') {
      this.log.warn(`${executionId}: not sent again: ${refusal.reason}`);
      return true;
    }
    await runExecutionCommand(
      this.store,
      executionId,
      (s) =>
        this.takes(s, 'authorized')
          ? { type: 'DenyExecution', executionId, now: isoNow(this.clock), basis: refusal.basis, reason: refusal.reason }
          : undefined,
      { actor: this.actor, causationId: cause.id, correlation: cause.metadata['correlation'] as never },
      this.clock,
    );
    return true;
  }

  private async run(state: ExecutionState, dispatchedAt?: number): Promise<void> {
    const tool = this.tools.get(state.accepted!.toolName);
    const call = tool === undefined ? undefined : await this.prepared.get(state, tool);
    const timer = processMetrics().dispatchSeconds.startTimer({ channel: this.channel });
    // The attempt is a span of the call's trace; the channel passes it on to the target where it can (HTTP: traceparent).
    const attributes = { 'oncegate.channel': this.channel, 'oncegate.execution.id': state.executionId!, 'oncegate.attempt': state.attempts };
    const made: AttemptRecord = await inSpan(`attempt ${this.channel}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const attempted =
        call === undefined
          ? notSent(tool === undefined ? 'the tool is no longer in the contract file' : 'the arguments are missing')
          : await this.attempt(state, call);
      span.setAttribute('oncegate.outcome', attempted.kind === 'unknown' ? `unknown: ${attempted.reason}` : attempted.notSentReason !== undefined ? 'not_sent' : attempted.outcome);
      return attempted;
    });
    timer({ outcome: made.kind === 'unknown' ? 'unknown' : made.notSentReason !== undefined ? 'not_sent' : made.outcome });
    // Nothing left on this attempt, but an earlier one may have acted: the execution's outcome stays unknown.
    const record: AttemptRecord =
      made.kind === 'observed' && made.notSentReason !== undefined && earlierAttemptMayHaveActed(state) ? { kind: 'unknown', reason: 'not_sent_after_unknown' } : made;
    if (record !== made) this.log.warn(`${state.executionId}: attempt ${state.attempts} sent nothing (${made.kind === 'observed' ? made.notSentReason : ''}); attempt ${state.unknownOutcome!.attempt}'s outcome is still unknown`);
    if (record.kind === 'unknown') processMetrics().unknownOutcomes.inc({ channel: this.channel, reason: record.reason });
    await this.record(state.executionId!, state.attempts, record, dispatchedAt);
    // Settled: no attempt of it follows. After an unknown outcome, recovery may send it again from the same call.
    if (record.kind === 'observed') this.prepared.forget(state.executionId!);
  }

  /**
   * Records what the attempt came to. It must land: conflicts with other writers are re-decided on fresh state
   * without a cap, and any other failure (the store busy in another process, the disk full) is tried again
   * after a pause, until it lands — or, once the process is stopping, until a grace has passed (the attempt is
   * then found lost and settled by its class). With `dispatchedAt`, the fold that holds the attempt's `Dispatched`
   * decides first, without reading: a stream that moved on since makes the append conflict, and it is read then.
   */
  private async record(executionId: ExecutionId, attempt: number, record: AttemptRecord, dispatchedAt?: number): Promise<void> {
    const sealed = record.kind === 'observed' ? await this.sealResult(executionId, attempt, record.result) : undefined;
    // Another instance may have given the attempt up for lost meanwhile (its lease looked expired while the store
    // was away): the answer is still recorded, as the evidence it is; a 'not sent' or unknown then adds nothing.
    const answered = record.kind === 'observed' && record.notSentReason === undefined;
    const stillDispatched = (s: ExecutionState) => (s.status === 'dispatched' && s.attempts === attempt) || (answered && awaitsLateReport(s, attempt));
    const command = (): ExecutionCommand =>
      record.kind === 'unknown'
        ? { type: 'RecordUnknownOutcome', executionId, now: isoNow(this.clock), attempt, reason: record.reason }
        : {
            type: 'ObserveOutcome',
            executionId,
            now: isoNow(this.clock),
            attempt,
            outcome: record.outcome,
            ...(record.notSentReason === undefined ? { source: 'response' as const } : { source: 'not_sent' as const, notSentReason: record.notSentReason }),
            targetStatus: record.targetStatus,
            exitCode: record.exitCode,
            resultRef: sealed!.ref,
            resultDigest: sealed!.digest,
          };
    const options = dispatchedAt === undefined ? {} : { fromCacheAsOf: { streamId: executionStream(executionId), revision: dispatchedAt } };
    await this.untilItLands(executionId, attempt, () =>
      runExecutionCommand(this.store, executionId, (s) => (stillDispatched(s) ? command() : undefined), { actor: this.actor }, this.clock, options),
    );
  }

  /** Seals a result for the journal (tried again until it lands, as an outcome is). */
  protected sealResult(executionId: ExecutionId, attempt: number, result: StoredResult): Promise<SealedRef> {
    return this.untilItLands(executionId, attempt, () => this.sealed.seal('result', executionId, Buffer.from(JSON.stringify(result))));
  }

  /**
   * Records the task the target runs the attempt in flight as (`AttemptTaskStarted`), so that recovery can resume it;
   * `false` when it was not recorded (the attempt no longer in flight, a reference refused), which is logged.
   */
  protected async recordTask(executionId: ExecutionId, attempt: number, task: Readonly<Record<string, unknown>>): Promise<boolean> {
    try {
      const { appended } = await runExecutionCommand(
        this.store,
        executionId,
        (s) => (s.status === 'dispatched' && s.attempts === attempt && s.attemptTask?.attempt !== attempt ? { type: 'RecordAttemptTask', executionId, now: isoNow(this.clock), attempt, task } : undefined),
        { actor: this.actor },
        this.clock,
      );
      if (appended.length === 0) this.log.warn(`${executionId}: the task of attempt ${attempt} was not recorded: the attempt is no longer in flight, or has a task already`);
      return appended.length > 0;
    } catch (error) {
      this.log.warn(`${executionId}: the task of attempt ${attempt} was not recorded: ${(error as Error).message}`);
      return false;
    }
  }

  /**
   * What the target said of the attempt in flight, recorded only while that attempt is still the one dispatched
   * (`AttemptProgressed`); nothing is retried: a lost report is replaced by the next one.
   */
  protected recordProgress(executionId: ExecutionId, attempt: number, report: { progress: number; total: number | null; message: string | null }): Promise<unknown> {
    return runExecutionCommand(
      this.store,
      executionId,
      // Only growing reports reach here (AttemptProgress drops the others); one is written while its attempt is in flight.
      (s) => (s.status === 'dispatched' && s.attempts === attempt ? { type: 'RecordAttemptProgress', executionId, now: isoNow(this.clock), attempt, ...report } : undefined),
      { actor: this.actor },
      this.clock,
    );
  }

  private async untilItLands<T>(executionId: ExecutionId, attempt: number, write: () => Promise<T>): Promise<T> {
    for (let failures = 0; ; failures += 1) {
      try {
        return await write();
      } catch (error) {
        // The decider's refusal would be the same on every try; only the store's failures pass.
        if (error instanceof DomainError || error instanceof EventStoreClosedError || Date.now() > (this.giveUpRecordingAt ?? Infinity)) throw error;
        this.log.warn(`${executionId}: recording the outcome of attempt ${attempt} failed, trying again: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, backoffMs(failures, 50, RECORD_RETRY_MAX_MS)));
      }
    }
  }

  /** Lets in-flight attempts record their outcome before the process stops. */
  async drain(): Promise<void> {
    this.giveUpRecordingAt = Date.now() + DRAIN_RECORD_GRACE_MS;
    await Promise.allSettled([...this.inFlight]);
  }
}

/** A definite failure in which nothing left: recorded with source `not_sent` and the reason; the agent reads `text`. */
export function notSent(reason: string, text = `not sent: ${reason}`): AttemptRecord {
  return { kind: 'observed', outcome: 'failed', targetStatus: null, exitCode: null, result: textResult(text), notSentReason: reason };
}

export function textResult(text: string): StoredResult {
  return { status: null, exitCode: null, contentType: 'text/plain', body: text, encoding: 'utf8', truncated: false };
}
