import { Controller, Inject, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { ExecutionId, ExecutionState } from '@oncegate/domain';
import type { ToolContract } from '@oncegate/contracts';
import type { HttpAttemptResult, HttpDispatcher } from '@oncegate/dispatcher-http';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { EVENT_STORE } from '@oncegate/nest-event-store';
import { isoNow, loadExecution, runExecutionCommand, type Clock } from '@oncegate/execution-journal';
import { recoverExecution } from '../recovery/execution-recovery';
import type { SealedStore } from '@oncegate/sealed-store';
import type { StoredResult } from '../../front/tool-results';
import type { CredentialResolver } from '../credentials';
import { CLOCK, CREDENTIALS, DISPATCHER_ID, HTTP_DISPATCHER, SEALED_STORE, TOOLS } from '../tokens';

const SERVICE = 'service:dispatcher-http';
const LOW_WATER = 'dispatcher-http/unsettled-low-water';

/**
 * Sends HTTP tools. `Dispatched` is appended — durably, with the expected revision, so only one instance wins —
 * before the request leaves; the outcome is recorded as observed or unknown from what the socket saw.
 */
@Controller()
export class DispatcherHttpController implements OnApplicationBootstrap {
  private readonly log = new Logger('dispatcher-http');
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(TOOLS) private readonly tools: ReadonlyMap<string, ToolContract>,
    @Inject(SEALED_STORE) private readonly sealed: SealedStore,
    @Inject(HTTP_DISPATCHER) private readonly http: HttpDispatcher,
    @Inject(CREDENTIALS) private readonly credentials: CredentialResolver,
    @Inject(DISPATCHER_ID) private readonly dispatcherId: string,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** The first attempt, or a new one after an operator resolved a review as not executed. */
  @EventPattern('ExecutionAuthorized')
  onAuthorized(@Payload() event: RecordedEvent): Promise<void> {
    return this.dispatch(event.metadata['executionId'] as ExecutionId, event);
  }

  @EventPattern('ReviewResolved')
  onReviewResolved(@Payload() event: RecordedEvent): Promise<void> {
    return this.dispatch(event.metadata['executionId'] as ExecutionId, event);
  }

  /** Recovery by class: after an unknown outcome, after a retry, after the evidence it asked for. */
  @EventPattern('OutcomeUnknown')
  onOutcomeUnknown(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  @EventPattern('RetryAttached')
  onRetryAttached(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  @EventPattern('StatusQueried')
  onStatusQueried(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  private async recover(cause: RecordedEvent): Promise<void> {
    const executionId = cause.metadata['executionId'] as ExecutionId;
    const { state } = await loadExecution(this.store, executionId);
    if (state.accepted?.channel !== 'http') return;
    await recoverExecution(
      this.store,
      this.clock,
      executionId,
      cause,
      {
        redispatch: (_execution, retry) => this.dispatch(executionId, retry, 'outcome_unknown'),
        queryStatus: (execution) => this.queryStatus(execution.state),
      },
      { actor: SERVICE, causationId: cause.id },
    );
  }

  /** Appends Dispatched (from `from`, `authorized` unless recovering) and, once it is durable, sends. */
  private async dispatch(executionId: ExecutionId, cause: RecordedEvent, from: 'authorized' | 'outcome_unknown' = 'authorized'): Promise<void> {
    const outcome = await runExecutionCommand(
      this.store,
      executionId,
      (state) =>
        state.accepted?.channel === 'http' && state.status === from
          ? { type: 'RecordDispatch', executionId, now: isoNow(this.clock), dispatcherId: this.dispatcherId }
          : undefined,
      { actor: SERVICE, causationId: cause.id, correlation: cause.metadata['correlation'] as never },
      this.clock,
    );
    if (outcome.appended.length === 0) return;
    // Dispatched is durable: only now may a byte leave. The send is not awaited, so one slow target never
    // holds up the events of other executions.
    const sending = this.send(outcome.state).catch((error: unknown) =>
      this.log.error(`${executionId}: recording the outcome failed: ${(error as Error).message}`),
    );
    this.inFlight.add(sending);
    void sending.finally(() => this.inFlight.delete(sending));
  }

  /** The contract's status query: does the precondition of the write still hold at the target? */
  private async queryStatus(state: ExecutionState): Promise<{ preconditionHolds: boolean; observedStatus: string | null }> {
    const tool = this.tools.get(state.accepted!.toolName);
    const query = tool?.statusQuery;
    if (tool === undefined || query == null) return { preconditionHolds: false, observedStatus: 'no status query in the contract' };
    const args = await this.argumentsOf(state);
    const credential = tool.credentialRef ? this.credentials.resolve(tool.credentialRef) : undefined;
    const result = await this.http.send({
      executionId: state.executionId!,
      tool: { ...tool, request: { kind: 'http', method: 'GET', url: query.http.url, headers: query.http.headers, body: undefined, idempotencyHeader: null } },
      arguments: args ?? {},
      ...(credential ? { credential } : {}),
    });
    if (result.kind !== 'response' || result.outcome !== 'succeeded') {
      return { preconditionHolds: false, observedStatus: result.kind === 'response' ? `status ${result.status}` : result.kind };
    }
    let observed: unknown;
    try {
      observed = jsonPointer(JSON.parse(Buffer.from(result.body).toString('utf8')), query.precondition.pointer);
    } catch {
      return { preconditionHolds: false, observedStatus: 'the status answer is not JSON' };
    }
    const expected = query.precondition.equals.kind === 'literal' ? query.precondition.equals.value : args?.[query.precondition.equals.argument];
    return {
      preconditionHolds: JSON.stringify(observed) === JSON.stringify(expected),
      observedStatus: `${query.precondition.pointer}=${JSON.stringify(observed) ?? 'absent'}`.slice(0, 200),
    };
  }

  private async argumentsOf(state: ExecutionState): Promise<Record<string, unknown> | undefined> {
    const ref = state.accepted?.argumentsRef;
    const blob = ref ? await this.sealed.open(ref) : undefined;
    return blob === undefined ? undefined : (JSON.parse(blob.plaintext.toString('utf8')) as Record<string, unknown>);
  }

  private async send(state: ExecutionState): Promise<void> {
    const executionId = state.executionId!;
    const attempt = state.attempts;
    const tool = this.tools.get(state.accepted!.toolName);
    const args = await this.argumentsOf(state);
    let result: HttpAttemptResult;
    if (tool === undefined || args === undefined) {
      result = { kind: 'not_sent', reason: tool === undefined ? 'the tool is no longer in the contract file' : 'the arguments are missing' };
    } else {
      const credential = tool.credentialRef ? this.credentials.resolve(tool.credentialRef) : undefined;
      result = await this.http.send({ executionId, tool, arguments: args, ...(credential ? { credential } : {}) });
    }
    await this.record(executionId, attempt, result);
  }

  private async record(executionId: ExecutionId, attempt: number, result: HttpAttemptResult): Promise<void> {
    const context = { actor: SERVICE };
    if (result.kind === 'unknown') {
      await runExecutionCommand(
        this.store,
        executionId,
        (state) =>
          state.status === 'dispatched' && state.attempts === attempt
            ? { type: 'RecordUnknownOutcome', executionId, now: isoNow(this.clock), attempt, reason: result.reason }
            : undefined,
        context,
        this.clock,
      );
      return;
    }
    const stored: StoredResult =
      result.kind === 'response'
        ? {
            status: result.status,
            exitCode: null,
            contentType: result.contentType,
            body: isText(result.contentType) ? Buffer.from(result.body).toString('utf8') : Buffer.from(result.body).toString('base64'),
            encoding: isText(result.contentType) ? 'utf8' : 'base64',
            truncated: result.truncated,
          }
        : { status: null, exitCode: null, contentType: 'text/plain', body: `not sent: ${result.reason}`, encoding: 'utf8', truncated: false };
    const sealed = await this.sealed.seal('result', executionId, Buffer.from(JSON.stringify(stored)));
    await runExecutionCommand(
      this.store,
      executionId,
      (state) =>
        state.status === 'dispatched' && state.attempts === attempt
          ? {
              type: 'ObserveOutcome',
              executionId,
              now: isoNow(this.clock),
              attempt,
              outcome: result.kind === 'response' ? result.outcome : 'failed',
              source: 'response',
              targetStatus: result.kind === 'response' ? result.status : null,
              exitCode: null,
              resultRef: sealed.ref,
              resultDigest: sealed.digest,
            }
          : undefined,
      context,
      this.clock,
    );
  }

  /**
   * After a restart, attempts this dispatcher had in flight have lost their socket: their outcome is unknown.
   * Recovery by class then happens when a retry arrives (DESIGN section 6); nothing is re-sent here.
   */
  async onApplicationBootstrap(): Promise<void> {
    const from = (await this.store.readCheckpoint(LOW_WATER)) ?? 0;
    let after = from;
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
          { actor: SERVICE, causationId: event.id },
          this.clock,
        );
      }
      if (page.lastPosition <= after) break;
      after = page.lastPosition;
    }
    await this.store.storeCheckpoint(LOW_WATER, lowest !== undefined ? lowest - 1 : after);
  }

  /** Lets in-flight attempts record their outcome before the process stops. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}

/** RFC 6901: the value at `pointer` in `document`, or `undefined`. */
function jsonPointer(document: unknown, pointer: string): unknown {
  if (pointer === '') return document;
  let current: unknown = document;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function isText(contentType: string | null): boolean {
  return contentType === null || /^(text\/|application\/([a-z0-9.+-]*\+)?(json|xml|x-www-form-urlencoded))/i.test(contentType);
}
