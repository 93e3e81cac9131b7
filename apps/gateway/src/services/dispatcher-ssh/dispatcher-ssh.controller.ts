import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { ExecutionState, MarkerState } from '@oncegate/domain';
import type { ToolContract } from '@oncegate/contracts';
import type { SshCredential, SshDispatcher } from '@oncegate/dispatcher-ssh';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { EVENT_STORE } from '@oncegate/nest-event-store';
import type { Clock } from '@oncegate/execution-journal';
import type { SealedStore } from '@oncegate/sealed-store';
import type { VaultService } from '../../vault/vault-service';
import { ChannelDispatcher, textResult, type AttemptRecord, type DispatchRefusal } from '../dispatch/channel-dispatcher';
import { vaultRefusal } from '../dispatch/vault-refusal';
import { CLOCK, DISPATCHER_ID, SEALED_STORE, SSH_DISPATCHER, TOOLS, VAULT } from '../tokens';

/**
 * Runs SSH tools (remote commands) through the durable marker protocol: `Dispatched` is durable before the
 * exec request is sent; after an unknown outcome the marker on the host decides (DESIGN section 6). The key
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
  protected override async preflight(_state: ExecutionState, tool: ToolContract): Promise<DispatchRefusal | undefined> {
    const found = await this.keyFor(tool);
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

  protected async attempt(state: ExecutionState, tool: ToolContract, args: Record<string, unknown>): Promise<AttemptRecord> {
    const found = await this.keyFor(tool);
    if ('refusal' in found) {
      return { kind: 'observed', outcome: 'failed', targetStatus: null, exitCode: null, result: textResult(`not sent: ${found.refusal.reason}`) };
    }
    const result = await this.ssh.run({ executionId: state.executionId!, attempt: state.attempts, tool, arguments: args, credential: found.credential });
    switch (result.kind) {
      case 'unknown':
        return { kind: 'unknown', reason: result.reason };
      case 'not_sent':
        return { kind: 'observed', outcome: 'failed', targetStatus: null, exitCode: null, result: textResult(`not sent: ${result.reason}`) };
      case 'denied':
        // The host is not the one the contract pinned: nothing was run, and it is not retried.
        return { kind: 'observed', outcome: 'failed', targetStatus: null, exitCode: null, result: textResult(`denied, nothing was run: ${result.reason}`) };
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
   * before the probe reports it as started (which holds it for review).
   */
  protected override async probeMarker(state: ExecutionState): Promise<{ marker: MarkerState; exitStatus: number | null }> {
    const tool = this.tools.get(state.accepted!.toolName);
    const found = tool === undefined ? undefined : await this.keyFor(tool);
    // Without the key the host cannot be asked: never conclude "absent" from that.
    if (tool === undefined || found === undefined || 'refusal' in found) return { marker: 'started', exitStatus: null };
    const { credential } = found;
    const deadline = Date.now() + (tool.marker?.startedWaitMs ?? 5_000);
    for (;;) {
      const probe = await this.ssh.probeMarker({ executionId: state.executionId!, tool, credential });
      if (probe.kind === 'completed') return { marker: 'completed', exitStatus: probe.exitStatus };
      if (probe.kind === 'absent') return { marker: 'absent', exitStatus: null };
      // Started, or the host could not be asked: never conclude "absent" from a failed probe.
      if (Date.now() >= deadline) return { marker: 'started', exitStatus: null };
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
