import { inSpan, processMetrics, SpanKind } from '@oncegate/host-operations';
import {
  executionIdFromUlid,
  executionStream,
  isExecutionId,
  formatIntentScope,
  matchRetry,
  checkIdempotencyKey,
  type AnswerSettlement,
  type AnswerTold,
  type AnswerVia,
  type AttachActionKind,
  type CancellationTrigger,
  type ExecutionId,
  type ExecutionState,
  type ExecutionStatus,
  type IntentScope,
  type ProtocolCorrelation,
} from '@oncegate/domain';
import { fingerprintPolicyOf, validateArguments, type ToolContract } from '@oncegate/contracts';
import { buildOperationRecord, candidateFingerprints, type Fingerprint, type KeyRing } from '@oncegate/fingerprint';
import type { AppendManyEntry, EventStore } from '@oncegate/event-store';
import {
  idempotencyKeyClaimEntry,
  intentClaimEntry,
  isoNow,
  KeyedTurns,
  loadExecution,
  newUlid,
  readIdempotencyKeyClaim,
  readIntentClaim,
  runExecutionCommand,
  runExecutionCommands,
  startClaimedExecution,
  traceContextFrom,
  type Clock,
  type CommandOutcome,
  type ExecutionWatcher,
  type InlineSteps,
  type LoadedExecution,
  type StreamEventAt,
} from '@oncegate/execution-journal';
import type { SealedStore } from '@oncegate/sealed-store';
import { LRUCache } from 'lru-cache';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CallProgress } from './call-progress';
import { invalidArguments, invalidRun, toMcpError, unknownTool } from './mcp-errors';
import { toolResult, type AnswerFlags, type StoredResult } from './tool-results';
import type { DeliveryTracker, DeliveryWatch } from '@oncegate/service-result-delivery';
import { DECLARED_RUN, runOfCall } from '@oncegate/host-decisions';

export const META_RUN = 'io.oncegate/run';
export const META_IDEMPOTENCY_KEY = 'io.oncegate/idempotency-key';
export const META_NEW_INTENT = 'io.oncegate/new-intent';

/** Everything about one tools/call that is not its arguments. */
export interface CallContext {
  readonly actor: string;
  /** A run the client declared (`_meta["io.oncegate/run"]` or the `Oncegate-Run` header). */
  readonly declaredRun: string | undefined;
  readonly meta: Readonly<Record<string, unknown>>;
  readonly correlation: ProtocolCorrelation;
  /** Aborts when the client cancels; it only ever stops waiting, never a dispatched request. */
  readonly signal: AbortSignal;
  /** What an abort of `signal` is recorded as; `client_notification` when not said. */
  readonly cancelTrigger?: CancellationTrigger;
  /** Told of each state the call waits in (progress notifications), when the client asked for progress. */
  readonly progress?: CallProgress;
  /** How long the call waits for an answer before it answers "in progress"; `call_wait` when not said (a task: 0). */
  readonly waitMs?: number;
  /** Reports what the transport proved about this call's response; absent when it cannot tell (recorded as unproven). */
  readonly delivery: DeliveryWatch | undefined;
  /** The client takes a call still moving back as a task (the tasks extension): such an answer is told `via: task`. */
  readonly asTask?: boolean;
}

/** What an answer with no delivery watch is recorded with: the transport keeps no evidence for it. */
const NO_WATCH = 'the transport keeps no evidence of receipt for this request';
/** How long a stopping gateway waits for the answers whose delivery just settled to be recorded. */
const ANSWERS_DRAIN_MS = 5_000;

export interface ToolCallDependencies {
  readonly store: EventStore;
  readonly watcher: ExecutionWatcher;
  readonly sealed: SealedStore;
  readonly keyRing: KeyRing;
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly deliveries: DeliveryTracker;
  readonly clock: Clock;
  /** How long a call waits for an answerable state before it returns a pending result. */
  readonly callWaitMs: number;
  /** The services of this process that decide inline in the commit that accepts an execution (none: each waits for its subscription). */
  readonly inlineSteps?: InlineSteps;
}

/** States a caller can be answered with; the others are still moving (a task in them is `working`). */
export const ANSWERABLE: ReadonlySet<ExecutionStatus> = new Set([
  'completed',
  'completed_result_not_delivered',
  'delivered',
  'failed',
  'denied',
  'outcome_unknown',
  'needs_review',
  'cancelled',
  'expired',
  'abandoned',
  // Waits for the agent's retry: telling it so is the answer.
  'not_executed',
]);

/** A claim whose execution stream has not appeared after this long belongs to a claimer that died. */
const ORPHAN_CLAIM_MS = 5_000;
const MAX_ROUNDS = 50;
/** How many fingerprints a process remembers having handled (a retry of one of them reads its claim first). */
const HANDLED_INTENTS = 10_000;

/** What one claim round decided: go round again, answer as an attached retry, or answer the new execution. */
type ClaimRound =
  | { readonly kind: 'again' }
  | { readonly kind: 'attached'; readonly state: ExecutionState; readonly action: AttachActionKind; readonly release: () => void }
  | { readonly kind: 'started'; readonly state: ExecutionState; readonly revision: number; readonly release: () => void };

/** An answer whose delivery has settled, to be recorded. */
interface AnswerToRecord {
  readonly told: AnswerTold;
  readonly correlation: ProtocolCorrelation;
  readonly delivery: AnswerSettlement;
  readonly answeredFrom: StreamEventAt | undefined;
}

export class ToolCalls {
  /**
   * Identical calls of this process claim one at a time (a turn per fingerprint): the second reads the first's
   * claim and attaches, instead of sealing its own copy of the arguments for a claim it would lose. Only the claim
   * takes a turn; waiting for the answer does not.
   */
  private readonly claimTurns = new KeyedTurns<string>();
  /**
   * The fingerprints this process handled lately. A call whose fingerprint is not among them (and that has no
   * older key's fingerprint to look under) claims its intent without reading the claim stream first: the claim
   * expects no stream, so a claim that exists refuses it and nothing is written, and the next round reads as any
   * retry does. A new intent, nearly every call, is then claimed without a read; a retry this process handled
   * reads first, as identical calls of one burst do (they take turns behind the first).
   */
  private readonly handledIntents = new LRUCache<string, true>({ max: HANDLED_INTENTS });
  /** Answers waiting for their delivery to settle, then for their event to be appended. */
  private readonly recordings = new Set<Promise<void>>();
  /** Per execution, the answers waiting for the turn of their record (`recordWithOthers`). */
  private readonly answersToRecord = new Map<ExecutionId, { readonly answers: AnswerToRecord[]; readonly recorded: Promise<CommandOutcome> }>();

  constructor(private readonly deps: ToolCallDependencies) {}

  async call(name: string, args: Readonly<Record<string, unknown>>, context: CallContext): Promise<CallToolResult> {
    const tool = this.deps.tools.get(name);
    if (tool === undefined) throw unknownTool(name, [...this.deps.tools.keys(), 'execution_status']);
    const violations = validateArguments(tool, args);
    if (violations.length > 0) throw invalidArguments(name, violations);
    if (context.declaredRun !== undefined && !DECLARED_RUN.test(context.declaredRun)) throw invalidRun(context.declaredRun);
    const counted = { tool: tool.name, class: tool.operationClass };
    // One span per call, continuing the caller's trace when its request carries a traceparent in `_meta`; the
    // events this call appends carry the span on, so every service's work on it joins the same trace.
    const callerTrace = context.meta['traceparent'];
    const spanOptions = {
      kind: SpanKind.SERVER,
      attributes: { 'mcp.method.name': 'tools/call', 'oncegate.tool': tool.name, 'oncegate.operation_class': tool.operationClass },
      ...(callerTrace === undefined ? {} : { parent: traceContextFrom(callerTrace) }),
    };
    return inSpan(`tools/call ${tool.name}`, spanOptions, async (span) => {
      try {
        const result = await this.matchOrCreate(tool, args, context);
        const execution = (result.structuredContent as { execution?: { id: string; state: string; attached: boolean; replayed: boolean } } | undefined)?.execution;
        const match = execution?.replayed ? 'replayed' : execution?.attached ? 'attached' : 'new';
        processMetrics().toolCalls.inc({ ...counted, match, state: execution?.state ?? 'unknown' });
        span.setAttributes({ 'oncegate.match': match, 'oncegate.execution.state': execution?.state ?? 'unknown', ...(execution ? { 'oncegate.execution.id': execution.id } : {}) });
        return result;
      } catch (error) {
        processMetrics().toolCalls.inc({ ...counted, match: 'none', state: 'error' });
        throw toMcpError(error);
      }
    });
  }

  private scopeOf(tool: ToolContract, args: Readonly<Record<string, unknown>>, context: CallContext): IntentScope {
    const callerKey = context.meta[META_IDEMPOTENCY_KEY];
    if (typeof callerKey === 'string' && callerKey.length > 0) return { kind: 'key', key: callerKey, source: 'caller' };
    if (tool.durableKeyArgument !== null) {
      const value = args[tool.durableKeyArgument];
      if (typeof value === 'string' && value.length > 0) return { kind: 'key', key: value, source: 'contract' };
    }
    if (context.declaredRun !== undefined) return { kind: 'run', runId: context.declaredRun };
    return { kind: 'actor' };
  }

  private async matchOrCreate(
    tool: ToolContract,
    args: Readonly<Record<string, unknown>>,
    context: CallContext,
  ): Promise<CallToolResult> {
    const { store, keyRing, clock } = this.deps;
    const scope = this.scopeOf(tool, args, context);
    const request = tool.request;
    const record = buildOperationRecord(
      {
        actor: context.actor,
        tool: tool.name,
        channel: tool.channel,
        target: tool.target,
        credentialRef: tool.credentialRef,
        ...(request.kind === 'http' ? { method: request.method } : {}),
        arguments: args as Record<string, unknown>,
        intentScope: formatIntentScope(scope),
      },
      fingerprintPolicyOf(tool),
      keyRing,
    );
    // The current key's first: the record's canonical JSON is written and keyed once for both.
    const fingerprints = candidateFingerprints(record, keyRing);
    const current = fingerprints[0]!;
    const newIntent = context.meta[META_NEW_INTENT] === true;
    const callerKey = scope.kind === 'key' && scope.source === 'caller' ? scope.key : undefined;
    // The first round of an intent this process has not seen claims without reading; a refused claim reads.
    const firstUnread = fingerprints.length === 1 && !this.handledIntents.has(current);
    this.handledIntents.set(current, true);

    const claimRound = async (unread: boolean): Promise<ClaimRound> => {
      // A caller's key is claimed per actor and tool: the same key with another record is refused, never new.
      const keyClaim = callerKey === undefined || unread ? undefined : await readIdempotencyKeyClaim(store, context.actor, tool.name, callerKey);
      if (keyClaim) checkIdempotencyKey({ claim: keyClaim.claim, fingerprints });

      // The latest claim under any key still in the ring (rotation keeps old fingerprints findable).
      let prior: { execution: LoadedExecution; claimedAt: string } | undefined;
      let currentRevision: number | undefined;
      for (const candidate of unread ? [] : fingerprints) {
        const read = await readIntentClaim(store, candidate);
        if (candidate === current) currentRevision = read.revision;
        if (read.claim && prior === undefined) {
          prior = { execution: await loadExecution(store, read.claim.executionId), claimedAt: read.claim.claimedAt };
        }
      }
      if (prior && prior.execution.state.status === 'initial') {
        // A claim and its ExecutionAccepted commit together; a claim without one was written by an earlier version
        // that appended them one after the other. Unless that claimer died, wait for its ExecutionAccepted.
        if (clock.now().getTime() - Date.parse(prior.claimedAt) < ORPHAN_CLAIM_MS) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          return { kind: 'again' };
        }
        prior = undefined;
      }

      const now = isoNow(clock);
      const decision = matchRetry({ prior: prior?.execution.state, now, newIntent });
      if (decision.kind === 'attach') {
        // Registered before RetryAttached is appended, so a cancel by another caller that lands after it counts
        // this caller as waiting.
        const release = this.deps.deliveries.register(decision.executionId);
        await this.deps.deliveries.visible(decision.executionId);
        const attached = await this.attach(decision.executionId, context).catch((error: unknown) => {
          release();
          throw error;
        });
        if (attached === undefined) {
          release();
          return { kind: 'again' };
        }
        return { kind: 'attached', state: attached.state, action: attached.action, release };
      }

      if (decision.expirePrior && prior?.execution.state.executionId) {
        await runExecutionCommand(
          store,
          prior.execution.state.executionId,
          (state) => (state.status === prior!.execution.state.status ? { type: 'ExpireExecution', executionId: state.executionId!, now } : undefined),
          { actor: context.actor, correlation: context.correlation },
          clock,
        ).catch(() => undefined);
      }

      // The intent claim, the caller's key claim and ExecutionAccepted commit together or not at all: a claim
      // another call took first (or a key claimed in between) writes nothing, and the next round attaches.
      const executionId = executionIdFromUlid(newUlid(clock.now().getTime()));
      const claims: AppendManyEntry[] = [
        intentClaimEntry({ executionId, fingerprint: current, claimedAt: now }, currentRevision, context.actor, clock),
      ];
      if (callerKey !== undefined) {
        claims.push(
          idempotencyKeyClaimEntry(callerKey, { executionId, fingerprint: current, actor: context.actor, tool: tool.name }, keyClaim?.revision, clock),
        );
      }
      // Registered before the first event commits: an outcome can follow that commit at once. Result delivery in
      // other processes hears the caller's answer, or sees its lease if it still waits after a while (`when_long`).
      const release = this.deps.deliveries.register(executionId, 'when_long');
      const started = await this.start(tool, args, context, executionId, record, current, scope, now, claims).catch((error: unknown) => {
        release();
        throw error;
      });
      if (started === undefined) release();
      return started === undefined ? { kind: 'again' } : { kind: 'started', state: started.state, revision: started.revision!, release };
    };

    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const step = await this.claimTurns.run(current, () => claimRound(round === 0 && firstUnread));
      if (step.kind === 'attached') return this.answerAttached(tool, step.state, step.action, context, step.release);
      if (step.kind === 'started') {
        return this.waitAndAnswer(tool, step.state, { attached: false, replayed: false }, context, () => true, step.release, {
          streamId: executionStream(step.state.executionId!),
          revision: step.revision,
        });
      }
    }
    throw new Error(`could not settle the claim for ${tool.name} after ${MAX_ROUNDS} rounds`);
  }

  /**
   * Appends RetryAttached, deciding from the state it is appended after; `undefined` when the execution moved to
   * a state that no longer matches (the caller then starts over).
   */
  private async attach(
    executionId: ExecutionId,
    context: CallContext,
  ): Promise<{ state: ExecutionState; action: AttachActionKind } | undefined> {
    let action: AttachActionKind | undefined;
    const outcome = await runExecutionCommand(
      this.deps.store,
      executionId,
      (state) => {
        const now = isoNow(this.deps.clock);
        const match = matchRetry({ prior: state, now, newIntent: false });
        if (match.kind !== 'attach') return undefined;
        action = match.action.kind;
        return { type: 'AttachRetry', executionId, now, correlation: context.correlation };
      },
      { actor: context.actor, correlation: context.correlation },
      this.deps.clock,
    );
    return action === undefined || outcome.appended.length === 0 ? undefined : { state: outcome.state, action };
  }

  /** Seals the arguments and commits the claims with ExecutionAccepted; `undefined` when a claim was lost. */
  private async start(
    tool: ToolContract,
    args: Readonly<Record<string, unknown>>,
    context: CallContext,
    executionId: ExecutionId,
    record: ReturnType<typeof buildOperationRecord>,
    fingerprint: Fingerprint,
    scope: IntentScope,
    now: ReturnType<typeof isoNow>,
    claims: readonly AppendManyEntry[],
  ): Promise<CommandOutcome | undefined> {
    // Sealed before the claim is settled, because ExecutionAccepted names the sealed arguments and commits with it;
    // a call that loses the claim to another process, or whose claim without a read is refused, discards its sealed
    // copy (within this process, identical calls take turns to claim and the later ones read first, sealing none).
    const sealedArguments = await this.deps.sealed.seal('arguments', executionId, Buffer.from(JSON.stringify(args)));
    const window = tool.correlationWindow;
    const outcome = await startClaimedExecution(
      this.deps.store,
      executionId,
      {
        type: 'AcceptExecution',
        executionId,
        now,
        record: record as never,
        fingerprint,
        operationClass: tool.operationClass,
        intentScope: scope,
        correlationWindowMs: window.kind === 'duration' ? window.ms : null,
        redeliveryGraceMs: tool.redeliveryGraceMs,
        attemptPolicy: {
          maxAttempts: 3,
          attemptTimeoutMs: tool.limits.connectTimeoutMs + tool.limits.responseTimeoutMs,
          markerBeforeWork: tool.marker?.writtenBeforeWork ?? false,
        },
        correlation: context.correlation,
        argumentsRef: sealedArguments.ref,
        runId: runOfCall(context.actor, context.declaredRun, context.correlation.sessionId)?.runId ?? null,
      },
      claims,
      { actor: context.actor, correlation: context.correlation },
      this.deps.clock,
      this.deps.inlineSteps?.list(),
    );
    // Refused: nothing names the copy. Its deletion is not waited for; a store that cannot delete it now keeps it.
    if (outcome === undefined) void this.deps.sealed.discard?.(sealedArguments.ref).catch(() => undefined);
    return outcome;
  }

  private async answerAttached(
    tool: ToolContract,
    state: ExecutionState,
    action: AttachActionKind,
    context: CallContext,
    release: () => void,
  ): Promise<CallToolResult> {
    const replayed = action === 'replay_stored_result';
    const flags = { attached: true, replayed };
    if (action === 'recover_by_class' && state.status === 'outcome_unknown') {
      // The retry lets recovery act by class (evidence, a new attempt with the same key, or review); answer
      // with what it leads to, or with the unknown outcome if nothing moves within the call wait.
      const attempts = state.attempts;
      return this.waitAndAnswer(tool, state, flags, context, (next) => next.status !== 'outcome_unknown' || next.attempts > attempts, release);
    }
    return this.waitAndAnswer(tool, state, flags, context, () => true, release);
  }

  /**
   * Waits (up to the call wait) until the execution is answerable, then answers from its state. While it waits
   * the call is registered as a live caller, so result delivery knows a transport is open for it. `appended`: the
   * last event this call's own commit appended (see `ExecutionWatcher.waitUntil`).
   */
  private async waitAndAnswer(
    tool: ToolContract,
    state: ExecutionState,
    flags: AnswerFlags,
    context: CallContext,
    extra: (state: ExecutionState) => boolean,
    release: () => void = this.deps.deliveries.register(state.executionId!),
    appended?: StreamEventAt,
  ): Promise<CallToolResult> {
    const executionId = state.executionId!;
    let keepRegistration = false;
    // A client's cancel withdraws its own caller. It stops the execution only before Dispatched and only when no
    // other caller still waits for it; otherwise it is recorded as evidence and changes nothing (docs/gateway.md,
    // recovery). The decider settles the race with the dispatcher.
    const onCancel = () => {
      release();
      this.requestCancellation(executionId, context.actor, context.cancelTrigger ?? 'client_notification', context.correlation, flags.attached).catch(() => undefined);
    };
    context.signal.addEventListener('abort', onCancel, { once: true });
    // A client that gave up while the call was being accepted: its abort came before there was anything to cancel.
    if (context.signal.aborted) onCancel();
    try {
      // Each state the call still waits in is reported to a client that asked for progress.
      const ready = (s: ExecutionState) => {
        const answerable = ANSWERABLE.has(s.status) && extra(s);
        if (!answerable) context.progress?.(s);
        return answerable;
      };
      const waited = ready(state) ? undefined : await this.deps.watcher.waitUntil(executionId, ready, context.waitMs ?? this.deps.callWaitMs, context.signal, appended);
      const latest = waited?.state ?? state;
      const stored = await this.storedResult(latest);
      // Its result is in hand and nothing will send it again: what this process kept of its blobs goes now.
      if (latest.outcome !== null || latest.status === 'denied') this.deps.sealed.forget?.(executionId);
      const answer = toolResult(tool.name, latest, flags, stored);
      // A cancelled request gets no answer: the SDK sends nothing for it, and the cancel is recorded instead.
      if (!context.signal.aborted) {
        const via = context.asTask === true && !ANSWERABLE.has(latest.status) ? 'task' : undefined;
        const answeredFrom = waited?.revision === undefined ? undefined : { streamId: executionStream(executionId), revision: waited.revision };
        const recording = this.recordAnswer(executionId, toldOf(latest, answer, flags, isoNow(this.deps.clock), via), context.correlation, context.delivery, answeredFrom);
        // A result's caller stays registered until its delivery is recorded, so result delivery never records a
        // failure for an outcome someone is still being handed.
        if (latest.outcome !== null) {
          keepRegistration = true;
          void recording.finally(release);
        }
      }
      return answer;
    } finally {
      context.signal.removeEventListener('abort', onCancel);
      if (!keepRegistration) release();
    }
  }

  private async storedResult(state: ExecutionState): Promise<StoredResult | undefined> {
    const ref = state.outcome?.resultRef;
    if (!ref) return undefined;
    const opened = await this.deps.sealed.open(ref);
    return opened === undefined ? undefined : (JSON.parse(opened.plaintext.toString('utf8')) as StoredResult);
  }

  /**
   * Records the answer once the transport settled its delivery (docs/design.md sections 5 and 9): after the response
   * was written, never before, so nothing is appended on the call's path. A result proven delivered or refused is
   * `ResultDelivered` / `ResultDeliveryFailed`, which move the execution; every other answer, and one nothing proved
   * either way, is `AnswerGiven`, which moves nothing — the decider chooses. `answeredFrom`: the event the answer's
   * fold ended with; the record is decided on this process's fold that holds it, with no read (a stream that moved on
   * meanwhile makes the append conflict, and it is read then).
   */
  private recordAnswer(
    executionId: ExecutionId,
    told: AnswerTold,
    correlation: ProtocolCorrelation,
    delivery: DeliveryWatch | undefined,
    answeredFrom?: StreamEventAt,
  ): Promise<void> {
    const recording = (async () => {
      const settled = delivery === undefined ? { kind: 'unproven' as const, reason: NO_WATCH } : await delivery.settled;
      await this.recordWithOthers(executionId, { told, correlation, delivery: settled, answeredFrom });
    })().catch(() => undefined);
    this.recordings.add(recording);
    void recording.finally(() => this.recordings.delete(recording));
    return recording;
  }

  /**
   * Answers of one execution whose delivery settles while an earlier record of it waits for its turn (many callers
   * attached to one execution are answered at once) are recorded together: one append for all that are waiting
   * when the turn comes, each event with its own correlation, instead of one append and one commit each.
   */
  private recordWithOthers(executionId: ExecutionId, answer: AnswerToRecord): Promise<CommandOutcome> {
    const waiting = this.answersToRecord.get(executionId);
    if (waiting !== undefined) {
      waiting.answers.push(answer);
      return waiting.recorded;
    }
    const answers = [answer];
    // From its turn on (or its end, if it failed before deciding), an answer that settles waits for the next turn.
    const close = () => {
      if (this.answersToRecord.get(executionId)?.answers === answers) this.answersToRecord.delete(executionId);
    };
    const recorded = runExecutionCommands(
      this.deps.store,
      executionId,
      (state) => {
        close();
        if (state.status === 'initial') return [];
        const now = isoNow(this.deps.clock);
        return answers.map(({ told, correlation, delivery }) => ({
          command: { type: 'RecordAnswer', executionId, now, correlation, told, delivery },
          context: { actor: 'service:result-delivery', correlation },
        }));
      },
      this.deps.clock,
      // Nothing waits for the record: it may share the commit of whatever is appended next (the client's next call,
      // often, whose message is what proved the delivery).
      answer.answeredFrom === undefined ? { deferrable: true } : { fromCacheAsOf: answer.answeredFrom, deferrable: true },
    );
    this.answersToRecord.set(executionId, { answers, recorded });
    recorded.then(close, close);
    return recorded;
  }

  /**
   * Resolves once the answers whose delivery has settled are recorded (a stopping gateway ends its connections
   * first, which settles the rest as unproven), or after a few seconds, whichever comes first.
   */
  async answersRecorded(timeoutMs = ANSWERS_DRAIN_MS): Promise<void> {
    if (this.recordings.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([Promise.allSettled([...this.recordings]), timeout]);
    clearTimeout(timer);
  }

  /**
   * Answers a call again whose request outlived the process that received it (its stream resumed after a
   * restart): it waits as the original call would have, then answers from the execution's state. `undefined`
   * when the execution is not the caller's or its tool is gone.
   */
  async answerAgain(executionId: ExecutionId, attached: boolean, context: CallContext): Promise<CallToolResult | undefined> {
    const { state } = await loadExecution(this.deps.store, executionId);
    const tool = state.accepted === null ? undefined : this.deps.tools.get(state.accepted.toolName);
    if (state.accepted?.actor !== context.actor || tool === undefined) return undefined;
    return this.waitAndAnswer(tool, state, { attached, replayed: false }, context, () => true);
  }

  /** The built-in `execution_status`: an agent may ask only about its own executions. */
  async status(executionId: string, actor: string): Promise<CallToolResult | undefined> {
    return (await this.execution(executionId, actor))?.answer;
  }

  /**
   * One of the agent's executions, with its answer as a call would get it now and when its stream last moved;
   * `undefined` for an id that is not an execution of this agent.
   */
  async execution(executionId: string, actor: string): Promise<{ state: ExecutionState; answer: CallToolResult; lastUpdatedAt: string } | undefined> {
    if (!isExecutionId(executionId)) return undefined;
    const execution = await loadExecution(this.deps.store, executionId);
    if (execution.state.accepted?.actor !== actor) return undefined;
    const stored = await this.storedResult(execution.state);
    const answer = toolResult(execution.state.accepted.toolName, execution.state, { attached: false, replayed: false }, stored);
    const last = execution.events.at(-1);
    return { state: execution.state, answer, lastUpdatedAt: (last?.metadata['recordedAt'] as string | undefined) ?? execution.state.accepted.acceptedAt };
  }

  /**
   * A task of the agent (`tasks/get`), as `execution` finds it. When the task hands out its result (the execution is
   * answerable and not cancelled), that is an answer to the task's call and is recorded as one (`via: task_result`),
   * with the correlation of the `tasks/get` that carried it.
   */
  async taskAnswer(
    executionId: string,
    actor: string,
    correlation: ProtocolCorrelation,
    delivery: DeliveryWatch | undefined,
  ): Promise<{ state: ExecutionState; answer: CallToolResult; lastUpdatedAt: string } | undefined> {
    const found = await this.execution(executionId, actor);
    if (found !== undefined && ANSWERABLE.has(found.state.status) && found.state.status !== 'cancelled') {
      const told = toldOf(found.state, found.answer, { attached: false, replayed: false }, isoNow(this.deps.clock), 'task_result');
      void this.recordAnswer(found.state.executionId!, told, correlation, delivery);
    }
    return found;
  }

  /**
   * A cancel of one of the agent's executions that nobody waits for (a task's `tasks/cancel`): before `Dispatched`
   * and with no caller waiting it cancels; otherwise it is recorded as evidence and changes nothing. `undefined` for
   * an id that is not an execution of this agent; else the state after it.
   */
  async cancel(executionId: string, actor: string, trigger: CancellationTrigger, correlation: ProtocolCorrelation): Promise<ExecutionState | undefined> {
    if (!isExecutionId(executionId)) return undefined;
    const { state } = await loadExecution(this.deps.store, executionId);
    if (state.accepted?.actor !== actor) return undefined;
    return this.requestCancellation(executionId, actor, trigger, correlation, true, state);
  }

  /**
   * Appends a cancel: the decider cancels only before `Dispatched` and when no other caller waits. Callers wait in
   * this process or, when the services run apart, in another front (`deliveries.waiting`); one that attaches while
   * this is decided shows in the stream as a `RetryAttached` after the one counted here, and counts as waiting too,
   * so a re-issued call is never answered with a cancel it did not ask for. `countFirstCaller`: the cancel is not the
   * first caller's own, so that caller may be one still waiting (in another front it shows only after a while).
   */
  private async requestCancellation(
    executionId: ExecutionId,
    actor: string,
    trigger: CancellationTrigger,
    correlation: ProtocolCorrelation,
    countFirstCaller: boolean,
    // Read before the waiting callers are counted: a retry attached after this read was registered before it appended.
    before?: ExecutionState,
  ): Promise<ExecutionState> {
    before ??= (await loadExecution(this.deps.store, executionId)).state;
    const attachedBefore = before.retriesAttached;
    await this.deps.deliveries.visible(executionId);
    const acceptedAt = countFirstCaller && before.accepted !== null ? Date.parse(before.accepted.acceptedAt) : undefined;
    const waiting = await this.deps.deliveries.waiting(executionId, acceptedAt);
    const outcome = await runExecutionCommand(
      this.deps.store,
      executionId,
      (state) => ({
        type: 'RequestCancellation',
        executionId,
        now: isoNow(this.deps.clock),
        trigger,
        correlation,
        otherCallersWaiting: waiting || state.retriesAttached > attachedBefore,
      }),
      { actor, correlation },
      this.deps.clock,
    );
    return outcome.state;
  }
}

/** What an answer tells the agent, as its `structuredContent.execution` carries it. */
function toldOf(state: ExecutionState, answer: CallToolResult, flags: AnswerFlags, givenAt: ReturnType<typeof isoNow>, via?: AnswerVia): AnswerTold {
  return {
    state: state.status,
    isError: answer.isError === true,
    attempts: state.attempts,
    attached: flags.attached,
    replayed: flags.replayed,
    givenAt,
    ...(via === undefined ? {} : { via }),
  };
}
