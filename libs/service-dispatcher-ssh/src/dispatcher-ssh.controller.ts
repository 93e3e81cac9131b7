import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { ExecutionState } from '@oncegate/domain';
import type { ToolContract } from '@oncegate/contracts';
import type { SshCredential, SshDispatcher } from '@oncegate/dispatcher-ssh';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { EVENT_STORE } from '@oncegate/nest-event-store';
import type { Clock } from '@oncegate/execution-journal';
import type { SealedStore } from '@oncegate/sealed-store';
import type { VaultService } from '@oncegate/service-host/vault/vault-service';
import { ChannelDispatcher, notSent, type AttemptRecord, type DispatchRefusal } from '@oncegate/service-host/dispatch/channel-dispatcher';
import type { MarkerFinding } from '@oncegate/service-host/recovery/execution-recovery';
import { vaultRefusal } from '@oncegate/service-host/dispatch/vault-refusal';
import type { PreparedCall } from '@oncegate/service-host/prepared-calls';
import { CLOCK, DISPATCHER_ID, SEALED_STORE, SSH_DISPATCHER, TOOLS, VAULT } from '@oncegate/service-host/tokens';

/**
 * Runs SSH tools (remote commands) through the durable marker protocol: `Dispatched` is durable before the
 * exec request is sent; after an unknown outcome the marker on the host decides (docs/design.md section 6). The key
 * comes from the vault at connect time, only for the host and port it is bound to.
 */
@Controller()
export class DispatcherSshController extends ChannelDispatcher {
  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(TOOLS) tools: ReadonlyMap<string, ToolContract>,
    @Inject(SEALED_STORE) sealed: SealedStore,
    @Inject(SSH_DISPATCHER) private readonly ssh: SshDispatcher,
    @Inject(VAULT) private readonly vault: VaultService,
    @Inject(DISPATCHER_ID) dispatcherId: string,
    @Inject(CLOCK) clock: Clock,
  ) {
    super('ssh', store, tools, sealed, dispatcherId, clock);
  }

  @EventPattern('MarkerProbed')
  onMarkerProbed(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  /** The vault is unlocked and the key opens and is bound to the contract's host and port. */
  protected override async preflight(_state: ExecutionState, call: PreparedCall): Promise<DispatchRefusal | undefined> {
    const found = await this.keyFor(call.tool);
    return 'refusal' in found ? found.refusal : undefined;
  }

  /** The key to log in to the tool's host with, or why there is none. */
  private async keyFor(tool: ToolContract): Promise<{ credential: SshCredential } | { refusal: DispatchRefusal }> {
    if (tool.request.kind !== 'ssh') return { refusal: { basis: 'credential_unresolved', reason: `tool ${tool.name} is not an SSH tool` } };
    if (tool.credentialRef === null) return { refusal: { basis: 'credential_unresolved', reason: `tool ${tool.name} names no credential for its SSH key` } };
    try {
      return { credential: await this.vault.sshCredential(tool.credentialRef, tool.request.host, tool.request.port) };
    } catch (error) {
      return { refusal: vaultRefusal(error) };
    }
  }

  protected async attempt(state: ExecutionState, call: PreparedCall): Promise<AttemptRecord> {
    const { tool, args } = call;
    const found = await this.keyFor(tool);
    if ('refusal' in found) return notSent(found.refusal.reason);
    const result = await this.ssh.run({ executionId: state.executionId!, attempt: state.attempts, tool, arguments: args, credential: found.credential });
    switch (result.kind) {
      case 'unknown':
        return { kind: 'unknown', reason: result.reason };
      case 'claimed':
        // Nothing of this attempt ran; another attempt holds the execution, and its marker will tell the outcome.
        this.log.warn(`${state.executionId}: ${result.reason}`);
        return { kind: 'unknown', reason: 'claimed_by_another_attempt' };
      case 'not_sent':
        return notSent(result.reason);
      case 'denied':
        // The host is not the one the contract pinned: nothing was sent past the key exchange, and it is not retried.
        return notSent(result.reason, `denied, nothing was run: ${result.reason}`);
      case 'exited': {
        const stdout = Buffer.from(result.stdout).toString('utf8');
        const stderr = Buffer.from(result.stderr).toString('utf8');
        return {
          kind: 'observed',
          outcome: result.outcome,
          targetStatus: null,
          exitCode: result.exitCode,
          result: {
            status: null,
            exitCode: result.exitCode,
            contentType: 'text/plain',
            body: stderr === '' ? stdout : `${stdout}\n--- stderr ---\n${stderr}`,
            encoding: 'utf8',
            truncated: result.truncated,
          },
        };
      }
    }
  }

  /**
   * Reads the marker. A command that started and has not finished gets the contract's `started_wait` to finish
   * before the probe reports it as started (which holds it for review). A host that cannot be asked is recorded as
   * `probe_failed` with the reason — at once for a host key that is not the pinned one, after `started_wait` for a
   * host that may come back — never as a marker state it did not show.
   */
  protected override async probeMarker(state: ExecutionState): Promise<MarkerFinding> {
    const tool = this.tools.get(state.accepted!.toolName);
    if (tool === undefined || tool.request.kind !== 'ssh') {
      return { marker: 'probe_failed', exitStatus: null, failure: `tool ${state.accepted!.toolName} is no longer an SSH tool in the contract file` };
    }
    const found = await this.keyFor(tool);
    if ('refusal' in found) return { marker: 'probe_failed', exitStatus: null, failure: `no key to ask the host with: ${found.refusal.reason}` };
    const { credential } = found;
    const host = `${tool.request.user}@${tool.request.host}:${tool.request.port}`;
    const deadline = Date.now() + (tool.marker?.startedWaitMs ?? 5_000);
    for (;;) {
      const probe = await this.ssh.probeMarker({ executionId: state.executionId!, tool, credential });
      const waitedOut = Date.now() >= deadline;
      switch (probe.kind) {
        case 'completed':
          return {
            marker: 'completed',
            exitStatus: probe.exitStatus,
            markerAttempt: probe.attempt,
            keptOutput: probe.keptOutput.length > 0 ? { host, paths: probe.keptOutput } : null,
          };
        case 'absent':
          return { marker: 'absent', exitStatus: null };
        case 'started':
          if (waitedOut) return { marker: 'started', exitStatus: null, markerAttempt: probe.attempt };
          break;
        case 'denied':
          return { marker: 'probe_failed', exitStatus: null, failure: probe.reason };
        case 'not_sent':
        case 'unknown':
          if (waitedOut) return { marker: 'probe_failed', exitStatus: null, failure: probe.reason };
          break;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
