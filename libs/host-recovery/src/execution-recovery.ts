import { nextRecoveryStep, type DefiniteOutcome, type ExecutionId, type RecordMarkerProbe, type TaskFinding } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { isoNow, loadExecution, runExecutionCommand, type AppendContext, type Clock, type LoadedExecution } from '@oncegate/execution-journal';

/** What a marker probe found, as `RecordMarkerProbe` records it. */
export type MarkerFinding = Pick<RecordMarkerProbe, 'marker' | 'exitStatus' | 'markerAttempt' | 'failure' | 'keptOutput'>;

/**
 * What resuming an attempt's task at the target came to: its outcome, with the result sealed already, or why it gave
 * none (the class's rule then decides).
 */
export type TaskResumption =
  | {
      readonly kind: 'observed';
      readonly outcome: DefiniteOutcome;
      readonly targetStatus: number | null;
      readonly exitCode: number | null;
      readonly resultRef: string;
      readonly resultDigest: string;
    }
  | { readonly kind: 'unsettled'; readonly finding: TaskFinding; readonly reason: string };

/** What a channel's dispatcher can do for recovery; the rules of which step comes when are not its business. */
export interface ChannelRecovery {
  /** Appends Dispatched (next attempt, same key) and sends; resolves once Dispatched is durable. */
  redispatch(execution: LoadedExecution, cause: RecordedEvent): Promise<void>;
  /** Runs the contract's status query (conditional writes). */
  queryStatus?(execution: LoadedExecution): Promise<{ preconditionHolds: boolean; observedStatus: string | null }>;
  /** Reads the durable marker on the host (remote commands). */
  probeMarker?(execution: LoadedExecution): Promise<MarkerFinding>;
  /** Asks the target for the outcome of the task it ran the current attempt as (any class). */
  resumeTask?(execution: LoadedExecution): Promise<TaskResumption>;
}

/** A retry arrived after the last unknown outcome and nothing was sent since: the agent asked to go on. */
export function retryPending(execution: LoadedExecution): boolean {
  const last = (type: string) => execution.events.findLast((event) => event.type === type)?.revision ?? -1;
  const retry = last('RetryAttached');
  return retry > last('OutcomeUnknown') && retry > last('Dispatched');
}

/**
 * Applies the class's recovery rule (docs/design.md section 6, decided by the pure `nextRecoveryStep`) to an execution
 * whose outcome is unknown: resume the attempt's task at the target and record its outcome, gather evidence (status
 * query, marker probe), report an outcome a marker proves,
 * hold for review, or send again — the last only when the agent retried, never on its own.
 */
export async function recoverExecution(
  store: EventStore,
  clock: Clock,
  executionId: ExecutionId,
  cause: RecordedEvent,
  channel: ChannelRecovery,
  context: AppendContext,
): Promise<void> {
  for (let step = 0; step < 4; step += 1) {
    const execution = await loadExecution(store, executionId);
    const { state } = execution;
    if (state.status !== 'outcome_unknown') return;
    const next = nextRecoveryStep(state, isoNow(clock));
    const attempt = state.attempts;
    const append = (build: Parameters<typeof runExecutionCommand>[2]) => runExecutionCommand(store, executionId, build, context, clock);
    const stillUnknown = (s: typeof state) => s.status === 'outcome_unknown' && s.attempts === attempt;
    switch (next.kind) {
      case 'hold_for_review':
        await append((s) => (stillUnknown(s) ? { type: 'RequireReview', executionId, now: isoNow(clock), reason: next.reason } : undefined));
        return;
      case 'report_outcome_from_marker':
        await append((s) =>
          stillUnknown(s)
            ? {
                type: 'ObserveOutcome',
                executionId,
                now: isoNow(clock),
                attempt,
                outcome: next.outcome,
                source: 'marker',
                targetStatus: null,
                exitCode: next.exitStatus,
                resultRef: null,
                resultDigest: null,
              }
            : undefined,
        );
        return;
      case 'resume_task': {
        const resumed: TaskResumption = channel.resumeTask
          ? await channel.resumeTask(execution)
          : { kind: 'unsettled', finding: 'unreachable', reason: 'this channel cannot resume a task' };
        if (resumed.kind === 'observed') {
          const { outcome, targetStatus, exitCode, resultRef, resultDigest } = resumed;
          await append((s) =>
            stillUnknown(s) ? { type: 'ObserveOutcome', executionId, now: isoNow(clock), attempt, outcome, source: 'task', targetStatus, exitCode, resultRef, resultDigest } : undefined,
          );
          return;
        }
        await append((s) => (stillUnknown(s) ? { type: 'RecordTaskCheck', executionId, now: isoNow(clock), attempt, finding: resumed.finding, reason: resumed.reason } : undefined));
        continue;
      }
      case 'query_status': {
        if (!channel.queryStatus) return;
        const status = await channel.queryStatus(execution);
        await append((s) => (stillUnknown(s) ? { type: 'RecordStatusQuery', executionId, now: isoNow(clock), attempt, ...status } : undefined));
        continue;
      }
      case 'probe_marker': {
        if (!channel.probeMarker) return;
        const probe = await channel.probeMarker(execution);
        await append((s) => (stillUnknown(s) ? { type: 'RecordMarkerProbe', executionId, now: isoNow(clock), attempt, ...probe } : undefined));
        continue;
      }
      case 'redispatch_same_key':
        if (retryPending(execution)) await channel.redispatch(execution, cause);
        return;
      case 'wait':
      case 'nothing_to_recover':
        return;
      // A step for a dispatched attempt (its owner gone or its deadline passed): the AttemptSweeper takes it.
      case 'record_unknown_outcome':
        return;
      default: {
        const never: never = next;
        throw new Error(`unexpected recovery step ${JSON.stringify(never)}`);
      }
    }
  }
}
