import { Controller, Inject, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { pluginServerOf, type ToolContract } from '@oncegate/contracts';
import { preparedRequest } from '@oncegate/channel-http';
import type { DenialBasis, ExecutionAcceptedData, ExecutionCommand, ExecutionId, ExecutionState, IsoInstant } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { executionAsOf, executionsWithEvent, isoNow, loadExecution, runExecutionCommand, stepTakenAlready, type Clock, type InlineStep } from '@oncegate/execution-journal';
import { endRun, grantedTools, grantRun, isPending, readRun, RunViews, sessionRunId, startRun, type RunGrantedData } from '@oncegate/host-decisions';
import { noVault, type BindingTarget, type VaultService, type VaultState } from '@oncegate/host-vault';
import { EVENT_STORE } from '@oncegate/nest-event-store';
import type { SealedStore } from '@oncegate/sealed-store';
import { APPROVAL_TIMEOUT_MS, CLOCK, POLICY, PREPARED_CALLS, PreparedCalls, SEALED_STORE, TOOLS, VAULT, type PreparedCall } from '@oncegate/service-host';
import { approvalDeadline, climbLadder, type LadderFacts, type LadderVerdict, type RunFacts } from './ladder';
import type { Policy } from './policy';

const ACTOR = 'service:authorization';
/** How often pending approvals are checked against their deadline. */
const DEADLINE_TICK_MS = 250;

interface PendingApproval {
  readonly executionId: ExecutionId;
  readonly requestedAt: string;
  readonly expiresAt: string | null;
  readonly runId: string | null;
  readonly scope: 'execution' | 'run';
  readonly tool: string;
}

/**
 * The authorization service: climbs the ladder for every accepted execution and records the verdict with its
 * basis; turns approval decisions into verdicts; denies approvals that time out or that a vault lock or unlock
 * invalidates; keeps the sessions journal (runs started, granted, ended).
 */
@Controller()
export class AuthorizationController implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('authorization');
  private readonly pending = new Map<ExecutionId, PendingApproval>();
  private timer: NodeJS.Timeout | undefined;
  private stopVaultWatch: (() => void) | undefined;
  private readonly runs: RunViews;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(POLICY) private readonly policy: Policy,
    @Inject(VAULT) private readonly vault: VaultService,
    @Inject(TOOLS) private readonly tools: ReadonlyMap<string, ToolContract>,
    @Inject(SEALED_STORE) private readonly sealed: SealedStore,
    @Inject(APPROVAL_TIMEOUT_MS) private readonly approvalTimeoutMs: number,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(PREPARED_CALLS) private readonly prepared: PreparedCalls = new PreparedCalls(sealed),
  ) {
    this.runs = new RunViews(store);
  }

  async onApplicationBootstrap(): Promise<void> {
    // Approvals requested before this process started: pick up the ones still pending.
    const waiting = await executionsWithEvent(this.store, 'ApprovalRequested', isPending);
    for (const { state } of waiting) this.track(state);
    this.stopVaultWatch = this.vault.onChange((state) => void this.invalidatePending(state));
    await this.invalidatePending(this.vault.state());
    this.timer = setInterval(() => void this.denyExpired(), DEADLINE_TICK_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.stopVaultWatch?.();
  }

  @EventPattern('ExecutionAccepted')
  async onAccepted(@Payload() event: RecordedEvent<ExecutionAcceptedData>): Promise<void> {
    const { executionId } = event.data;
    // Decided already, by the inline chain of the process that accepted it or by an earlier delivery.
    if (stepTakenAlready(this.store, executionId, event, (s) => s.status === 'accepted')) return;
    // The fold that holds the delivered event is enough to decide on: if the stream moved on, the append conflicts
    // and is decided again on what it holds.
    const { state } = await executionAsOf(this.store, executionId, event);
    if (state.status !== 'accepted') return;
    const command = await this.verdictOn(state, event.data.correlation.sessionId);
    const outcome = await this.apply(executionId, (s) => (s.status === 'accepted' ? command : undefined), event, event);
    this.settled(outcome);
  }

  /** The ladder's verdict on an accepted execution, as the command that records it. */
  private async verdictOn(state: ExecutionState, sessionId: string | undefined): Promise<ExecutionCommand> {
    const executionId = state.executionId!;
    const { actor, runId } = state.accepted!;
    const tool = this.tools.get(state.accepted!.toolName);
    // The run, the vault and the request the call renders to are read at once: none depends on another.
    const [run, vault, target] = await Promise.all([
      runId === null ? null : this.runFacts(runId, actor, sessionId),
      this.vault.refresh(),
      tool === undefined ? undefined : this.targetOf(state, tool),
    ]);
    const verdict = climbLadder(this.factsOf(state, run, vault, tool, target));
    this.log.debug(`${executionId}: ${describeVerdict(verdict)}`);
    const now = isoNow(this.clock);
    return verdict.kind === 'deny'
      ? { type: 'DenyExecution', executionId, now, basis: verdict.basis, reason: verdict.reason }
      : verdict.kind === 'allow'
        ? { type: 'AuthorizeExecution', executionId, now, basis: verdict.basis }
        : {
            type: 'RequestApproval',
            executionId,
            now,
            requestedBy: verdict.requestedBy,
            reason: verdict.reason,
            scope: verdict.scope,
            expiresAt: approvalDeadline(now, this.approvalTimeoutMs, state.accepted!.windowEndsAt),
          };
  }

  /** After a verdict is durable: a denied call is never sent, so its prepared call goes; a pending approval is tracked. */
  private settled(state: ExecutionState): void {
    if (state.status === 'denied') this.prepared.forget(state.executionId!);
    this.track(state);
  }

  /**
   * The same verdict, decided inline in the commit that accepts the execution when authorization runs in the
   * accepting process (docs/gateway.md, the pipeline).
   */
  inlineStep(): InlineStep {
    return {
      actor: ACTOR,
      decide: (state, correlation) => (state.status === 'accepted' ? this.verdictOn(state, correlation.sessionId) : undefined),
      committed: (state) => this.settled(state),
    };
  }

  @EventPattern('ApprovalGranted')
  async onApprovalGranted(@Payload() event: RecordedEvent): Promise<void> {
    const executionId = event.metadata['executionId'] as ExecutionId;
    const { state } = await loadExecution(this.store, executionId);
    const approval = state.approval;
    if (state.status !== 'awaiting_approval' || approval?.decision !== 'granted') return;
    this.pending.delete(executionId);
    if (approval.scope === 'run' && approval.runId !== null) {
      const run = await readRun(this.store, approval.runId);
      const tool = state.accepted!.toolName;
      if (run === undefined || run.ended !== null) {
        // Granted for a run that ended while the request waited: there is no run left to hold the grant.
        await this.apply(
          executionId,
          (s) =>
            s.status === 'awaiting_approval'
              ? { type: 'DenyExecution', executionId, now: isoNow(this.clock), basis: 'policy', reason: `run ${approval.runId} ended before its grant was approved` }
              : undefined,
          event,
        );
        return;
      }
      if (!grantedTools(run).includes(tool)) {
        await grantRun(
          this.store,
          { runId: approval.runId, tools: [tool], by: approval.decidedBy ?? 'unknown', reason: approval.reason, executionId },
          this.clock,
        );
      }
    }
    const basis = approval.scope === 'run' ? 'session_grant' : 'per_use_approval';
    await this.apply(
      executionId,
      (s) => (s.status === 'awaiting_approval' && s.approval?.decision === 'granted' ? { type: 'AuthorizeExecution', executionId, now: isoNow(this.clock), basis } : undefined),
      event,
    );
  }

  @EventPattern('ApprovalDenied')
  async onApprovalDenied(@Payload() event: RecordedEvent): Promise<void> {
    const executionId = event.metadata['executionId'] as ExecutionId;
    this.pending.delete(executionId);
    await this.apply(
      executionId,
      (s) =>
        s.status === 'awaiting_approval' && s.approval?.decision === 'denied'
          ? {
              type: 'DenyExecution',
              executionId,
              now: isoNow(this.clock),
              basis: 'approval_denied',
              reason: `${s.approval.decidedBy ?? 'an approver'} denied it: ${s.approval.reason}`,
            }
          : undefined,
      event,
    );
  }

  /** A run was granted a tool: other requests of that run waiting for the same grant are granted by it. */
  @EventPattern('RunGranted')
  async onRunGranted(@Payload() event: RecordedEvent<RunGrantedData>): Promise<void> {
    const { runId, tools, by, executionId: grantedBy } = event.data;
    for (const waiting of [...this.pending.values()]) {
      if (waiting.scope !== 'run' || waiting.runId !== runId || waiting.executionId === grantedBy) continue;
      if (!tools.includes('*') && !tools.includes(waiting.tool)) continue;
      await this.whilePending(
        waiting.executionId,
        (now) => ({ type: 'GrantApproval', executionId: waiting.executionId, now, by: ACTOR, reason: `run ${runId} was granted ${waiting.tool} by ${by} (${grantedBy})` }),
        event,
      );
    }
  }

  /** A session closed: the run it carried ends, and its grants with it. */
  @EventPattern('SessionClosed')
  async onSessionClosed(@Payload() event: RecordedEvent<{ sessionId: string }>): Promise<void> {
    const runId = sessionRunId(event.data.sessionId);
    if ((await readRun(this.store, runId)) === undefined) return;
    await endRun(this.store, runId, ACTOR, 'the MCP session was closed', this.clock);
  }

  private async runFacts(runId: string, actor: string, sessionId: string | undefined): Promise<RunFacts> {
    const source = sessionId !== undefined && runId === sessionRunId(sessionId) ? 'session' : 'declared';
    const run = await startRun(this.store, { runId, actor, source }, this.clock, this.runs);
    return { runId, actor: run.actor, ended: run.ended !== null, grantedTools: grantedTools(run) };
  }

  private factsOf(
    state: ExecutionState,
    run: RunFacts | null,
    vault: VaultState,
    tool: ToolContract | undefined,
    target: Awaited<ReturnType<AuthorizationController['targetOf']>> | undefined,
  ): LadderFacts {
    const accepted = state.accepted!;
    const facts = {
      actor: accepted.actor,
      tool: accepted.toolName,
      vault: { locked: vault.locked, reason: vault.reason },
      run,
      policy: this.policy.decide(accepted.actor, accepted.toolName),
      toolPerUseApproval: tool?.approval === 'per_use',
    };
    if (tool === undefined || target === undefined) {
      return { ...facts, targetProblem: `tool ${accepted.toolName} is no longer in the contract file`, credential: null };
    }
    if (typeof target === 'string') return { ...facts, targetProblem: target, credential: null };
    const ref = tool.credentialRef;
    if (ref === null) return { ...facts, targetProblem: null, credential: null };
    const entry = this.vault.describe(ref);
    const binding = entry === undefined ? undefined : this.vault.checkBinding(ref, target.target);
    // The dispatcher sends this same rendering: it need not check the binding again while the vault is unchanged.
    if (binding?.ok === true && target.call !== undefined && target.target.channel === 'http') {
      target.call.binding = { ref, version: entry!.version, url: target.target.url, vaultPosition: this.vault.journalPosition() };
    }
    const problem =
      entry === undefined
        ? vault.initialized
          ? `credential '${ref}' is not in the vault (oncegate vault set ${ref} …)`
          : `credential '${ref}' cannot be used: ${noVault(ref)}`
        : binding && !binding.ok
          ? binding.reason
          : null;
    return { ...facts, targetProblem: null, credential: { ref, problem, perUseApproval: entry?.approval === 'per_use' } };
  }

  /**
   * Where this call would go, rendered from its real arguments (the prepared call the dispatcher sends); a string
   * says why it cannot be.
   */
  private async targetOf(state: ExecutionState, tool: ToolContract): Promise<{ target: BindingTarget; call?: PreparedCall } | string> {
    const request = tool.request;
    if (request.kind === 'ssh') return { target: { channel: 'ssh', host: request.host, port: request.port } };
    if (request.kind === 'plugin') {
      // A plugin channel's server is named in its section; a tool without a credential needs none.
      const server = pluginServerOf(request);
      if (server !== undefined) return { target: { channel: 'host', ...server } };
      return tool.credentialRef === null
        ? { target: { channel: 'host', host: '', port: 0 } }
        : `tool ${tool.name} names credential '${tool.credentialRef}' but its ${request.channel} section names no host and port to bind it to`;
    }
    const call = await this.prepared.get(state, tool);
    if (call === undefined) return 'the call arguments are missing';
    const prepared = preparedRequest(call);
    if ('error' in prepared) return `the request of ${tool.name} cannot be built: ${prepared.error.message}`;
    return { target: { channel: 'http', url: prepared.request.url }, call };
  }

  private track(state: ExecutionState): void {
    const executionId = state.executionId;
    if (!executionId) return;
    const approval = state.approval;
    if (!isPending(state) || approval === null) {
      this.pending.delete(executionId);
      return;
    }
    this.pending.set(executionId, {
      executionId,
      requestedAt: approval.requestedAt,
      expiresAt: approval.expiresAt,
      runId: approval.runId,
      scope: approval.scope,
      tool: state.accepted!.toolName,
    });
  }

  private async denyExpired(): Promise<void> {
    const now = this.clock.now().getTime();
    for (const waiting of [...this.pending.values()]) {
      if (waiting.expiresAt === null || Date.parse(waiting.expiresAt) > now) continue;
      await this.denyPending(waiting, 'approval_timeout', `no decision by ${waiting.expiresAt}; the request was open since ${waiting.requestedAt}`);
    }
  }

  /**
   * Locking or unlocking the vault invalidates every approval requested before it: an approver decided (or
   * would decide) under a vault state that no longer holds.
   */
  private async invalidatePending(vault: VaultState): Promise<void> {
    if (vault.since === null) return;
    const since = Date.parse(vault.since);
    for (const waiting of [...this.pending.values()]) {
      // While locked no request may stand, whenever it was asked; an unlock voids those asked before it.
      if (!vault.locked && Date.parse(waiting.requestedAt) > since) continue;
      await this.denyPending(
        waiting,
        vault.locked ? 'vault_locked' : 'approval_invalidated',
        `the vault was ${vault.locked ? 'locked' : 'unlocked'} at ${vault.since} while the approval was pending`,
      );
    }
  }

  /** Stops tracking a waiting request and denies it, unless it was decided meanwhile; a failure is logged. */
  private async denyPending(waiting: PendingApproval, basis: DenialBasis, reason: string): Promise<void> {
    this.pending.delete(waiting.executionId);
    await this.whilePending(waiting.executionId, (now) => ({ type: 'DenyExecution', executionId: waiting.executionId, now, basis, reason })).catch(
      (error: unknown) => this.log.error(`${waiting.executionId}: ${(error as Error).message}`),
    );
  }

  /** Appends the command only while the execution's approval request is still pending. */
  private whilePending(executionId: ExecutionId, build: (now: IsoInstant) => ExecutionCommand, cause?: RecordedEvent): Promise<ExecutionState> {
    return this.apply(
      executionId,
      (s) => (isPending(s) ? build(isoNow(this.clock)) : undefined),
      cause,
    );
  }

  private async apply(
    executionId: ExecutionId,
    build: (state: ExecutionState) => ExecutionCommand | undefined,
    cause?: RecordedEvent,
    fromCacheAsOf?: RecordedEvent,
  ): Promise<ExecutionState> {
    const outcome = await runExecutionCommand(
      this.store,
      executionId,
      build,
      { actor: ACTOR, ...(cause ? { causationId: cause.id, correlation: cause.metadata['correlation'] as never } : {}) },
      this.clock,
      { fromCacheAsOf },
    );
    return outcome.state;
  }
}

function describeVerdict(verdict: LadderVerdict): string {
  return `${verdict.kind} at rung ${verdict.rung}: ${verdict.reason}`;
}
