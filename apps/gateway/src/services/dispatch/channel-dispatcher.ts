import { Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { DefiniteOutcome, ExecutionId, ExecutionState, UnknownOutcomeReason } from '@oncegate/domain';
import type { ToolContract } from '@oncegate/contracts';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { isoNow, loadExecution, runExecutionCommand, type Clock, type LoadedExecution } from '@oncegate/execution-journal';
import type { SealedStore } from '@oncegate/sealed-store';
import type { StoredResult } from '../../front/tool-results';
import { recoverExecution, type MarkerFinding } from '../recovery/execution-recovery';
import { openArguments } from '../sealed-arguments';

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

/** Why an attempt must not be sent, found before `Dispatched` is written; recorded as the denial's basis. */
export interface DispatchRefusal {
  readonly basis: 'vault_locked' | 'credential_unresolved';
  /** Names the credential and the target; never a value. */
  readonly reason: string;
}

/**
 * What every channel dispatcher does alike: append `Dispatched` (durable, with the expected revision, so only
 * one instance wins) before anything leaves; record the outcome; recover by class after an unknown outcome;
 * after a restart, record its own lost attempts as unknown. A channel supplies `attempt` (and, where it has
 * them, a status query or a marker probe).
 */
export abstract class ChannelDispatcher implements OnApplicationBootstrap {
  protected readonly log: Logger;
  private readonly inFlight = new Set<Promise<void>>();

  protected constructor(
    protected readonly channel: string,
    protected readonly store: EventStore,
    protected readonly tools: ReadonlyMap<string, ToolContract>,
    protected readonly sealed: SealedStore,
    protected readonly dispatcherId: string,
    protected readonly clock: Clock,
  ) {
    this.log = new Logger(`dispatcher-${channel}`);
  }

  private get actor(): string {
    return `service:dispatcher-${this.channel}`;
  }

  /** The first attempt. */
  @EventPattern('ExecutionAuthorized')
  onAuthorized(@Payload() event: RecordedEvent): Promise<void> {
    return this.dispatch(event.metadata['executionId'] as ExecutionId, event);
  }

  /** A new attempt after an operator resolved a review as not executed. */
  @EventPattern('ReviewResolved')
  onReviewResolved(@Payload() event: RecordedEvent): Promise<void> {
    return this.dispatch(event.metadata['executionId'] as ExecutionId, event);
  }

  /** Recovery by class: after an unknown outcome, after a retry (channels add the evidence events they produce). */
  @EventPattern('OutcomeUnknown')
  onOutcomeUnknown(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  @EventPattern('RetryAttached')
  onRetryAttached(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  onApplicationBootstrap(): Promise<void> {
    return this.recordLostAttempts();
  }

  /** Runs one attempt against the target; resolves with what came of it, never rejects. */
  protected abstract attempt(state: ExecutionState, tool: ToolContract, args: Record<string, unknown>): Promise<AttemptRecord>;

  /**
   * Checks what must hold before anything is sent (the vault unlocked, the credential bound to the real target),
   * before `Dispatched` is appended. A refusal of a first attempt is recorded as a denial; a recovery attempt is
   * simply not sent.
   */
  protected preflight?(state: ExecutionState, tool: ToolContract, args: Record<string, unknown>): Promise<DispatchRefusal | undefined>;

  protected queryStatus?(state: ExecutionState): Promise<{ preconditionHolds: boolean; observedStatus: string | null }>;
  protected probeMarker?(state: ExecutionState): Promise<MarkerFinding>;

  protected async recover(cause: RecordedEvent): Promise<void> {
    const executionId = cause.metadata['executionId'] as ExecutionId;
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
      },
      { actor: this.actor, causationId: cause.id },
    );
  }

  /** Appends Dispatched (from `from`: `authorized` unless recovering) and, once it is durable, runs the attempt. */
  protected async dispatch(executionId: ExecutionId, cause: RecordedEvent, from: 'authorized' | 'outcome_unknown' = 'authorized'): Promise<void> {
    if (await this.refused(executionId, cause, from)) return;
    const outcome = await runExecutionCommand(
      this.store,
      executionId,
      (state) =>
        state.accepted?.channel === this.channel && state.status === from
          ? { type: 'RecordDispatch', executionId, now: isoNow(this.clock), dispatcherId: this.dispatcherId }
          : undefined,
      { actor: this.actor, causationId: cause.id, correlation: cause.metadata['correlation'] as never },
      this.clock,
    );
    if (outcome.appended.length === 0) return;
    // Not awaited: one slow target never holds up the events of other executions.
    const running = this.run(outcome.state).catch((error: unknown) =>
      this.log.error(`${executionId}: recording the outcome failed: ${(error as Error).message}`),
    );
    this.inFlight.add(running);
    void running.finally(() => this.inFlight.delete(running));
  }

  /** Runs the channel's preflight; on a refusal records it (first attempt) or logs it (recovery). True when refused. */
  private async refused(executionId: ExecutionId, cause: RecordedEvent, from: 'authorized' | 'outcome_unknown'): Promise<boolean> {
    if (this.preflight === undefined) return false;
    const { state } = await loadExecution(this.store, executionId);
    if (state.accepted?.channel !== this.channel || state.status !== from) return false;
    const tool = this.tools.get(state.accepted.toolName);
    const args = tool === undefined ? undefined : await this.argumentsOf(state);
    // Without a tool or arguments, `run` records the definite failure.
    if (tool === undefined || args === undefined) return false;
    const refusal = await this.preflight(state, tool, args);
    if (refusal === undefined) return false;
    if (from === 'outcome_unknown') {
      this.log.warn(`${executionId}: not sent again: ${refusal.reason}`);
      return true;
    }
    await runExecutionCommand(
      this.store,
      executionId,
      (s) =>
        s.accepted?.channel === this.channel && s.status === 'authorized'
          ? { type: 'DenyExecution', executionId, now: isoNow(this.clock), basis: refusal.basis, reason: refusal.reason }
          : undefined,
      { actor: this.actor, causationId: cause.id, correlation: cause.metadata['correlation'] as never },
      this.clock,
    );
    return true;
  }

  private async run(state: ExecutionState): Promise<void> {
    const tool = this.tools.get(state.accepted!.toolName);
    const args = await this.argumentsOf(state);
    const record: AttemptRecord =
      tool === undefined || args === undefined
        ? notSent(tool === undefined ? 'the tool is no longer in the contract file' : 'the arguments are missing')
        : await this.attempt(state, tool, args);
    await this.record(state.executionId!, state.attempts, record);
  }

  private async record(executionId: ExecutionId, attempt: number, record: AttemptRecord): Promise<void> {
    const stillDispatched = (s: ExecutionState) => s.status === 'dispatched' && s.attempts === attempt;
    const context = { actor: this.actor };
    if (record.kind === 'unknown') {
      await runExecutionCommand(
        this.store,
        executionId,
        (s) => (stillDispatched(s) ? { type: 'RecordUnknownOutcome', executionId, now: isoNow(this.clock), attempt, reason: record.reason } : undefined),
        context,
        this.clock,
      );
      return;
    }
    const sealed = await this.sealed.seal('result', executionId, Buffer.from(JSON.stringify(record.result)));
    await runExecutionCommand(
      this.store,
      executionId,
      (s) =>
        stillDispatched(s)
          ? {
              type: 'ObserveOutcome',
              executionId,
              now: isoNow(this.clock),
              attempt,
              outcome: record.outcome,
              ...(record.notSentReason === undefined ? { source: 'response' } : { source: 'not_sent', notSentReason: record.notSentReason }),
              targetStatus: record.targetStatus,
              exitCode: record.exitCode,
              resultRef: sealed.ref,
              resultDigest: sealed.digest,
            }
          : undefined,
      context,
      this.clock,
    );
  }

  protected argumentsOf(state: ExecutionState): Promise<Record<string, unknown> | undefined> {
    return openArguments(this.sealed, state);
  }

  /**
   * After a restart, attempts this dispatcher had in flight have lost their connection: their outcome is
   * unknown, and recovery by class takes it from there. Nothing is sent here.
   */
  protected async recordLostAttempts(): Promise<void> {
    const lowWater = `dispatcher-${this.channel}/unsettled-low-water`;
    let after = (await this.store.readCheckpoint(lowWater)) ?? 0;
    let lowest: number | undefined;
    for (;;) {
      const page = await this.store.readAll({ after, maxCount: 1000, filter: { eventTypes: ['Dispatched'] } });
      for (const event of page.events) {
        const executionId = event.metadata['executionId'] as ExecutionId;
        const { state } = await loadExecution(this.store, executionId);
        if (state.status !== 'dispatched') continue;
        if (state.lastDispatch?.dispatcherId !== this.dispatcherId) {
          lowest ??= event.position;
          continue;
        }
        const attempt = state.attempts;
        this.log.warn(`${executionId}: attempt ${attempt} was in flight when the gateway stopped; outcome unknown`);
        await runExecutionCommand(
          this.store,
          executionId,
          (s) =>
            s.status === 'dispatched' && s.attempts === attempt
              ? { type: 'RecordUnknownOutcome', executionId, now: isoNow(this.clock), attempt, reason: 'dispatcher_lost' }
              : undefined,
          { actor: this.actor, causationId: event.id },
          this.clock,
        );
      }
      if (page.lastPosition <= after) break;
      after = page.lastPosition;
    }
    await this.store.storeCheckpoint(lowWater, lowest !== undefined ? lowest - 1 : after);
  }

  /** Lets in-flight attempts record their outcome before the process stops. */
  async drain(): Promise<void> {
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
