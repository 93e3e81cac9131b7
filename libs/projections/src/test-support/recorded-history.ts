/**
 * Test histories built with the real decider: each command is decided against the folded state and the events
 * are wrapped exactly as the journal records them (stream, revision, global position, metadata, hash chain).
 */
import {
  addMs,
  decide,
  evolve,
  executionIdFromUlid,
  executionStream,
  initialState,
  intentStream,
  type AcceptExecution,
  type ExecutionCommand,
  type ExecutionId,
  type ExecutionState,
  type Fingerprint,
  type IntentScope,
  type IsoInstant,
  type JsonObject,
  type ProtocolCorrelation,
} from '@oncegate/domain';
import type { RecordedEvent } from '@oncegate/event-store';
import { eventHash, GENESIS_HASH } from '@oncegate/journal';

export const T0: IsoInstant = '2026-07-22T10:00:00.000Z';
export const at = (ms: number): IsoInstant => addMs(T0, ms);

export const fingerprintOf = (hexByte: string, keyId = 'k1'): Fingerprint => `hmac-sha256:${keyId}:${hexByte.repeat(32)}`;
export const executionIdOf = (last: string): ExecutionId => executionIdFromUlid(`01J3Z6Y8QK4W5X2V7N9M0P1R2${last}`);

type CommandWithoutId<TCommand> = TCommand extends ExecutionCommand ? Omit<TCommand, 'executionId'> : never;

export interface AcceptOptions {
  readonly actor?: string;
  readonly fingerprint: Fingerprint;
  readonly scope?: IntentScope;
  readonly arguments?: JsonObject;
  readonly correlation?: ProtocolCorrelation;
  readonly now?: IsoInstant;
  readonly redeliveryGraceMs?: number;
  readonly correlationWindowMs?: number | null;
  readonly operationClass?: AcceptExecution['operationClass'];
  readonly tool?: string;
}

export class RecordedHistory {
  private readonly recorded: RecordedEvent[] = [];
  private readonly states = new Map<string, ExecutionState>();
  private readonly heads = new Map<string, { revision: number; hash: string }>();

  get events(): RecordedEvent[] {
    return [...this.recorded];
  }

  /** Decides one command on the execution's folded state and records its events. */
  run(
    executionId: ExecutionId,
    command: CommandWithoutId<ExecutionCommand>,
    context: { readonly actor: string; readonly correlation?: ProtocolCorrelation },
  ): RecordedEvent[] {
    const full = { ...command, executionId } as ExecutionCommand;
    const state = this.states.get(executionId) ?? initialState();
    const events = decide(full, state);
    this.states.set(executionId, events.reduce(evolve, state));
    return events.map((event) =>
      this.append(executionStream(executionId), event.type, event.data, {
        executionId,
        causationId: null,
        correlation: context.correlation ?? {},
        actor: context.actor,
        recordedAt: full.now,
        schemaVersion: event.schemaVersion,
      }),
    );
  }

  accept(executionId: ExecutionId, options: AcceptOptions): RecordedEvent[] {
    const actor = options.actor ?? 'agent:deploy-bot';
    const scope = options.scope ?? { kind: 'actor' };
    const scopeText = scope.kind === 'key' ? `key:${scope.key}` : scope.kind === 'run' ? `run:${scope.runId}` : 'actor';
    const correlation = options.correlation ?? { jsonRpcId: 1, sessionId: 'session-a', transport: 'streamable-http' };
    const now = options.now ?? T0;
    const tool = options.tool ?? 'set_config';
    this.claim(options.fingerprint, executionId, now, actor);
    return this.run(
      executionId,
      {
        type: 'AcceptExecution',
        now,
        record: {
          actor,
          tool,
          channel: 'http',
          target: 'config-api.internal.example/config',
          credential_ref: 'config-service',
          method: 'PUT',
          arguments: options.arguments ?? { name: 'db.pool', value: '64' },
          intent_scope: scopeText,
        },
        fingerprint: options.fingerprint,
        operationClass: options.operationClass ?? 'idempotent_write',
        intentScope: scope,
        correlationWindowMs: options.correlationWindowMs === undefined ? 5 * 60_000 : options.correlationWindowMs,
        redeliveryGraceMs: options.redeliveryGraceMs ?? 60_000,
        attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: 30_000, markerBeforeWork: false },
        correlation,
        argumentsRef: `sealed_arguments_${executionId}`,
      },
      { actor, correlation },
    );
  }

  /** The `IntentClaimed` the gateway appends before accepting. */
  claim(fingerprint: Fingerprint, executionId: ExecutionId, claimedAt: IsoInstant, actor: string): RecordedEvent {
    return this.append(intentStream(fingerprint), 'IntentClaimed', { executionId, fingerprint, claimedAt }, {
      actor,
      recordedAt: claimedAt,
      schemaVersion: 1,
    });
  }

  private append(streamId: string, type: string, data: unknown, metadata: Record<string, unknown>): RecordedEvent {
    const head = this.heads.get(streamId);
    const revision = head === undefined ? 0 : head.revision + 1;
    const prev = head?.hash ?? GENESIS_HASH;
    const position = this.recorded.length + 1;
    const id = `01900000-0000-7000-8000-${String(position).padStart(12, '0')}`;
    const fields = {
      streamId,
      revision,
      id,
      type,
      data,
      metadata: { eventId: id, ...metadata },
      recordedAt: String(metadata['recordedAt']),
    };
    const hash = eventHash(prev, fields);
    const event: RecordedEvent = { ...fields, position, prev, hash };
    this.heads.set(streamId, { revision, hash });
    this.recorded.push(event);
    return event;
  }
}
