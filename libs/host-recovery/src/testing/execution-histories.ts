import { randomBytes } from 'node:crypto';
import { executionIdFromUlid, type ExecutionCommand, type ExecutionId, type IsoInstant, type OperationClass } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { isoNow, newUlid, runExecutionCommand, type Clock } from '@oncegate/execution-journal';

export interface ExecutionHistory {
  readonly tool?: string;
  readonly operationClass?: OperationClass;
  /** The accepted attempt policy's timeout. Default 5 s. */
  readonly attemptTimeoutMs?: number;
  /** How far it got. Default `dispatched`. */
  readonly through?: 'authorized' | 'dispatched';
  /** Who dispatched it (with `through: 'dispatched'`). */
  readonly dispatcherId?: string;
  readonly argumentsRef?: string;
}

/**
 * An execution appended as the gateway's services would have left it: accepted (HTTP channel), authorized and,
 * unless told otherwise, dispatched by `dispatcherId`, each at the clock's current time.
 */
export async function givenExecution(store: EventStore, clock: Clock, history: ExecutionHistory = {}): Promise<ExecutionId> {
  const executionId = executionIdFromUlid(newUlid());
  const now: IsoInstant = isoNow(clock);
  const tool = history.tool ?? 'send_payment';
  const commands: ExecutionCommand[] = [
    {
      type: 'AcceptExecution',
      executionId,
      now,
      record: { actor: 'agent:test', tool, channel: 'http', target: 'test/target', credential_ref: null, method: 'POST', arguments: {}, intent_scope: 'actor' } as never,
      fingerprint: `hmac-sha256:k1:${randomBytes(32).toString('hex')}`,
      operationClass: history.operationClass ?? 'irreversible',
      intentScope: { kind: 'actor' },
      correlationWindowMs: 60_000,
      redeliveryGraceMs: 60_000,
      attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: history.attemptTimeoutMs ?? 5_000, markerBeforeWork: false },
      correlation: { jsonRpcId: 1, transport: 'streamable-http' },
      argumentsRef: history.argumentsRef ?? 'sealed_arguments_absent',
    },
    { type: 'AuthorizeExecution', executionId, now, basis: 'policy' },
  ];
  if ((history.through ?? 'dispatched') === 'dispatched') {
    commands.push({ type: 'RecordDispatch', executionId, now, dispatcherId: history.dispatcherId ?? 'dispatcher-http@test' });
  }
  for (const command of commands) await runExecutionCommand(store, executionId, () => command, { actor: 'agent:test' }, clock);
  return executionId;
}
