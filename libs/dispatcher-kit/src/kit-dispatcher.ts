import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { pluginServerOf, type ToolContract } from '@oncegate/contracts';
import type { ExecutionState } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import { EVENT_STORE } from '@oncegate/nest-event-store';
import type { SealedStore } from '@oncegate/sealed-store';
import { ChannelDispatcher, notSent, type AttemptRecord } from './channel-dispatcher';
import { isVaultError, vaultRefusal } from './vault-refusal';
import { CLOCK, DISPATCHER_ID, PREPARED_CALLS, SEALED_STORE, TOOLS, VAULT, type PreparedCall, type PreparedCalls } from '@oncegate/service-host';
import type { VaultService } from '@oncegate/host-vault';
import type { TaskResumption } from '@oncegate/host-recovery';
import type { DispatchRefusal, MarkerFinding, ResumedTask, SendOutcome, StatusFinding } from './channel-definition';
import type { HostAttempt, HostChannelDefinition, HostChannelDriver } from './host-channel';
import { hideSecretBytes, hideSecrets } from './hide-secrets';
import { AttemptProgress } from './attempt-progress';

/** The channel this dispatcher runs: its definition and the driver it opened in this process. */
export const OPENED_CHANNEL = Symbol('oncegate:opened-channel');

export interface OpenedChannel {
  readonly definition: HostChannelDefinition;
  readonly driver: HostChannelDriver;
}

/**
 * The dispatcher of any channel: the kit's side (ChannelDispatcher: `Dispatched` durable first, outcomes recorded
 * until they land, recovery by class) around the channel's driver. One class for every channel; each channel's
 * service hosts it in its own Nest microservice with its own consumer group.
 */
@Controller()
export class KitDispatcher extends ChannelDispatcher {
  private readonly definition: HostChannelDefinition;
  private readonly driver: HostChannelDriver;

  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(TOOLS) tools: ReadonlyMap<string, ToolContract>,
    @Inject(SEALED_STORE) sealed: SealedStore,
    @Inject(VAULT) private readonly vault: VaultService,
    @Inject(DISPATCHER_ID) dispatcherId: string,
    @Inject(CLOCK) clock: Clock,
    @Inject(PREPARED_CALLS) prepared: PreparedCalls,
    @Inject(OPENED_CHANNEL) opened: OpenedChannel,
  ) {
    super(opened.definition.name, store, tools, sealed, dispatcherId, clock, prepared);
    this.definition = opened.definition;
    this.driver = opened.driver;
    const { driver } = opened;
    // A channel that cannot gather a class's evidence records a finding that proves nothing: the call is held for
    // review, never left unknown. What a finding says is shown with the secrets hidden, then cut.
    this.queryStatus = (state) =>
      this.withEvidence<StatusFinding>(
        state,
        driver.queryStatus?.bind(driver),
        (reason) => ({ preconditionHolds: false, observedStatus: `not asked: ${reason}`.slice(0, 200) }),
        (found, hidden) => ({ preconditionHolds: found.preconditionHolds, observedStatus: found.observedStatus === null ? null : hideSecrets(found.observedStatus, hidden).slice(0, 200) }),
      );
    this.probeMarker = (state) =>
      this.withEvidence<MarkerFinding>(
        state,
        driver.probeMarker?.bind(driver),
        (reason) => ({ marker: 'probe_failed', exitStatus: null, failure: reason }),
        (found, hidden) => (found.failure == null ? found : { ...found, failure: hideSecrets(found.failure, hidden) }),
      );
    this.resumeTask = (state) => this.resumedTask(state);
  }

  /** Recovery goes on after a resumed task gave no outcome: the class's rule decides. */
  @EventPattern('AttemptTaskChecked')
  onAttemptTaskChecked(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  /**
   * The current attempt's task resumed at the target: its answer (secrets hidden, cut, sealed) is the attempt's outcome;
   * otherwise what was found, which the class's rule follows. A channel that cannot resume tasks finds it unreachable.
   */
  private async resumedTask(state: ExecutionState): Promise<TaskResumption> {
    const task = state.attemptTask!.task;
    const resume = this.driver.resumeTask?.bind(this.driver);
    const found = await this.withEvidence<ResumedTask, Extract<AttemptRecord, { kind: 'observed' }> | Extract<ResumedTask, { kind: 'unsettled' }>>(
      state,
      resume === undefined ? undefined : (attempt) => resume(attempt, task),
      (reason) => ({ kind: 'unsettled', finding: 'unreachable', reason: reason.slice(0, 200) }),
      (resumed, hidden, limits) =>
        resumed.kind === 'unsettled' ? { ...resumed, reason: hideSecrets(resumed.reason, hidden).slice(0, 200) } : observedRecord(resumed, hidden, limits.responseBytes),
    );
    if (found.kind === 'unsettled') return found;
    const { ref, digest } = await this.sealResult(state.executionId!, state.attempts, found.result);
    return { kind: 'observed', outcome: found.outcome, targetStatus: found.targetStatus, exitCode: found.exitCode, resultRef: ref, resultDigest: digest };
  }

  /** Recovery goes on after the evidence a status query or a marker probe recorded. */
  @EventPattern('StatusQueried')
  onStatusQueried(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  @EventPattern('MarkerProbed')
  onMarkerProbed(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  /** The kit's checks of the credential (plugin channels), then the channel's own. Nothing is decrypted here. */
  protected override async preflight(state: ExecutionState, call: PreparedCall): Promise<DispatchRefusal | undefined> {
    const refusal = this.definition.credentialKinds === undefined ? undefined : await this.credentialRefusal(call.tool);
    return refusal ?? this.driver.preflight?.(this.attemptOf(state, call));
  }

  protected async attempt(state: ExecutionState, call: PreparedCall): Promise<AttemptRecord> {
    const attempt = this.attemptOf(state, call);
    let secret: Buffer | undefined;
    try {
      secret = await this.secretFor(call.tool);
    } catch (error) {
      return notSent(vaultRefusal(error).reason);
    }
    const hidden = this.hiddenIn(call, secret);
    const progress = new AttemptProgress(
      state,
      (executionId, number, report) => this.recordProgress(executionId, number, report),
      (text) => hideSecrets(text, hidden),
      (message) => this.log.warn(message),
    );
    let outcome: SendOutcome;
    let sending = true;
    // A task reference counts only while the attempt is being sent: recovery resumes the task of the attempt in flight.
    const recordTask = (task: Readonly<Record<string, unknown>>) => {
      if (!sending) return Promise.resolve(false);
      // A reference is journaled as given: one that holds the credential or a secret argument is refused, not recorded.
      if (holdsSecret(task, hidden)) {
        this.log.warn(`${state.executionId}: the ${this.definition.name} channel's task reference for attempt ${state.attempts} holds a secret: it was not recorded`);
        return Promise.resolve(false);
      }
      return this.recordTask(state.executionId!, state.attempts, task);
    };
    try {
      const sent = { ...attempt, progress: progress.report, recordTask };
      outcome = await this.driver.send(secret === undefined ? sent : { ...sent, secret });
    } catch (error) {
      // The channel broke its promise to resolve: whether anything left is not known, so recovery by class decides.
      this.log.error(`${state.executionId}: the ${this.definition.name} channel's send failed: ${hideSecrets(String((error as Error).message), hidden)}`);
      outcome = { kind: 'unknown', reason: 'connection_reset' };
    } finally {
      sending = false;
      secret?.fill(0);
      await progress.stop();
    }
    return recordOf(outcome, hidden, attempt.limits.responseBytes);
  }

  /**
   * Evidence after an unknown outcome, with the credential as an attempt has it; `shown` hides the secrets (`hidden`) in
   * what it says. A channel whose `ask` rejects found nothing: `unasked` says why.
   */
  private async withEvidence<T, U = T>(
    state: ExecutionState,
    ask: ((attempt: HostAttempt) => Promise<T>) | undefined,
    unasked: (reason: string) => U,
    shown: (found: T, hidden: readonly string[], limits: HostAttempt['limits']) => U,
  ): Promise<U> {
    const tool = this.tools.get(state.accepted!.toolName);
    if (tool === undefined) return unasked(`tool ${state.accepted!.toolName} is no longer in the contract file`);
    if (ask === undefined) return unasked(`the ${this.definition.name} channel gathers no such evidence`);
    const call = await this.prepared.get(state, tool);
    if (call === undefined) return unasked('the arguments are missing');
    let secret: Buffer | undefined;
    let hidden: string[] = [];
    try {
      secret = await this.secretFor(tool);
      hidden = this.hiddenIn(call, secret);
      const attempt = this.attemptOf(state, call);
      return shown(await ask(secret === undefined ? attempt : { ...attempt, secret }), hidden, tool.limits);
    } catch (error) {
      const reason = isVaultError(error) ? vaultRefusal(error).reason : `${(error as Error).name}: ${(error as Error).message}`;
      return unasked(hideSecrets(reason, hidden));
    } finally {
      secret?.fill(0);
    }
  }

  private attemptOf(state: ExecutionState, call: PreparedCall): HostAttempt {
    const { tool } = call;
    return {
      executionId: state.executionId!,
      attempt: state.attempts,
      operationClass: state.accepted!.operationClass,
      tool,
      section: tool.request.kind === 'plugin' ? tool.request.config : {},
      args: call.args,
      limits: tool.limits,
      // Progress and tasks are taken from `send` alone (attempt() replaces these); a preflight or evidence has none.
      progress: () => undefined,
      recordTask: () => Promise.resolve(false),
      call,
      state,
    };
  }

  /** The credential's secret for a channel that declares `credentialKinds`; the kind was checked by the preflight. */
  private async secretFor(tool: ToolContract): Promise<Buffer | undefined> {
    if (this.definition.credentialKinds === undefined || tool.credentialRef === null || tool.request.kind !== 'plugin') return undefined;
    const server = pluginServerOf(tool.request);
    if (server === undefined) throw new Error(`the ${this.definition.name} section of ${tool.name} names no host and port for credential '${tool.credentialRef}'`);
    return this.vault.secret(tool.credentialRef, server.host, server.port);
  }

  /** The vault unlocked; the tool's credential of a kind the channel takes, bound to the server its section names. */
  private async credentialRefusal(tool: ToolContract): Promise<DispatchRefusal | undefined> {
    const vault = await this.vault.refresh();
    if (vault.locked) return { basis: 'vault_locked', reason: `the vault is locked: ${vault.reason}` };
    const ref = tool.credentialRef;
    if (ref === null) return undefined;
    const entry = this.vault.describe(ref);
    if (entry === undefined) return { basis: 'credential_unresolved', reason: `credential '${ref}' is not in the vault` };
    const kinds: readonly string[] = this.definition.credentialKinds ?? [];
    if (!kinds.includes(entry.kind)) {
      return { basis: 'credential_unresolved', reason: `credential '${ref}' is a ${entry.kind} credential; the ${this.definition.name} channel takes ${kinds.join(' or ')}` };
    }
    const server = tool.request.kind === 'plugin' ? pluginServerOf(tool.request) : undefined;
    if (server === undefined) return { basis: 'credential_unresolved', reason: `the ${this.definition.name} section of ${tool.name} names no host and port for credential '${ref}'` };
    const binding = this.vault.checkBinding(ref, { channel: 'host', ...server });
    return binding.ok ? undefined : { basis: 'credential_unresolved', reason: binding.reason };
  }

  /**
   * What must not reach the agent from a plugin channel: the credential, and the arguments the contract marks secret
   * (strings, and numbers of six digits or more), each also as it reads escaped inside a JSON string.
   */
  private hiddenIn(call: PreparedCall, secret: Buffer | undefined): string[] {
    if (this.definition.contract === undefined) return [];
    const values = call.tool.secretArguments
      .map((name) => call.args[name])
      .flatMap((value) => (typeof value === 'string' && value !== '' ? [value] : typeof value === 'number' && String(value).length >= 6 ? [String(value)] : []));
    const all = secret === undefined ? values : [secret.toString('utf8'), ...values];
    return all.flatMap((value) => {
      const escaped = JSON.stringify(value).slice(1, -1);
      return escaped === value ? [value] : [value, escaped];
    });
  }
}

/** Whether `value`, as JSON, holds any of the secrets (or fails to serialise, which the decider refuses anyway). */
function holdsSecret(value: unknown, hidden: readonly string[]): boolean {
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    return false;
  }
  return hidden.some((secret) => secret !== '' && text.includes(secret));
}

/** The attempt's outcome in the journal's terms: secrets hidden first, then the body cut to `responseBytes`. */
function recordOf(outcome: SendOutcome, hidden: readonly string[], responseBytes: number): AttemptRecord {
  switch (outcome.kind) {
    case 'unknown':
      return outcome;
    case 'not_sent':
      return notSent(hideSecrets(outcome.reason, hidden), outcome.text === undefined ? undefined : hideSecrets(outcome.text, hidden));
    case 'observed':
      return observedRecord(outcome, hidden, responseBytes);
  }
}

/** An observed outcome in the journal's terms: secrets hidden first, then the body cut to `responseBytes`. */
function observedRecord(outcome: Extract<SendOutcome, { kind: 'observed' }>, hidden: readonly string[], responseBytes: number): Extract<AttemptRecord, { kind: 'observed' }> {
  const encoding = outcome.encoding ?? 'utf8';
  let body = outcome.body;
  let truncated = outcome.truncated ?? false;
  // Hidden before it is cut: the cut then falls in hidden text, never inside a secret. A body is copied only to
  // hide or cut it: the built-in channels hand over bodies already hidden and within their limit.
  if (encoding === 'utf8') {
    body = hideSecrets(body, hidden);
    if (Buffer.byteLength(body, 'utf8') > responseBytes) {
      body = Buffer.from(body, 'utf8').subarray(0, responseBytes).toString('utf8').replace(/\uFFFD$/, '');
      truncated = true;
    }
  } else if (hidden.length > 0 || Buffer.byteLength(body, 'base64') > responseBytes) {
    const bytes = hideSecretBytes(Buffer.from(body, 'base64'), hidden);
    if (bytes.length > responseBytes) truncated = true;
    body = bytes.subarray(0, responseBytes).toString('base64');
  }
  return {
    kind: 'observed',
    outcome: outcome.outcome,
    targetStatus: outcome.status ?? null,
    exitCode: outcome.exitCode ?? null,
    result: { status: outcome.status ?? null, exitCode: outcome.exitCode ?? null, contentType: outcome.contentType ?? 'text/plain', body, encoding, truncated },
  };
}

