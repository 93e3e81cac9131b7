import { Logger } from '@nestjs/common';
import { SshDispatcher, type SshCredential } from '@oncegate/channel-ssh';
import type { ToolContract } from '@oncegate/contracts';
import {
  defineHostChannel,
  hostingOf,
  type HostAttempt,
  type HostChannelDriver,
  type KitDispatcher,
  type StandaloneDependencies,
  vaultRefusal,
} from '@oncegate/dispatcher-kit/host';
import type { DispatchRefusal, MarkerFinding, SendOutcome } from '@oncegate/dispatcher-kit';
import type { VaultService } from '@oncegate/host-vault';

/**
 * Runs SSH tools (remote commands) through the durable marker protocol: after an unknown outcome the marker on the
 * host decides (docs/design.md section 6). The key comes from the vault at connect time, only for the host and port
 * it is bound to.
 */
export class SshChannelDriver implements HostChannelDriver {
  constructor(
    private readonly ssh: SshDispatcher,
    private readonly vault: VaultService,
    private readonly log: { warn(message: string): void },
  ) {}

  /** The vault is unlocked and the key opens and is bound to the contract's host and port. */
  async preflight({ tool }: Omit<HostAttempt, 'secret'>): Promise<DispatchRefusal | undefined> {
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

  async send({ executionId, attempt, tool, args }: HostAttempt): Promise<SendOutcome> {
    const found = await this.keyFor(tool);
    if ('refusal' in found) return { kind: 'not_sent', reason: found.refusal.reason };
    const result = await this.ssh.run({ executionId, attempt, tool, arguments: args as Record<string, unknown>, credential: found.credential });
    switch (result.kind) {
      case 'unknown':
        return { kind: 'unknown', reason: result.reason };
      case 'claimed':
        // Nothing of this attempt ran; another attempt holds the execution, and its marker will tell the outcome.
        this.log.warn(`${executionId}: ${result.reason}`);
        return { kind: 'unknown', reason: 'claimed_by_another_attempt' };
      case 'not_sent':
        return { kind: 'not_sent', reason: result.reason };
      case 'denied':
        // The host is not the one the contract pinned: nothing was sent past the key exchange, and it is not retried.
        return { kind: 'not_sent', reason: result.reason, text: `denied, nothing was run: ${result.reason}` };
      case 'exited': {
        const stdout = Buffer.from(result.stdout).toString('utf8');
        const stderr = Buffer.from(result.stderr).toString('utf8');
        return {
          kind: 'observed',
          outcome: result.outcome,
          exitCode: result.exitCode,
          contentType: 'text/plain',
          body: stderr === '' ? stdout : `${stdout}\n--- stderr ---\n${stderr}`,
          truncated: result.truncated,
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
  async probeMarker({ executionId, tool }: HostAttempt): Promise<MarkerFinding> {
    if (tool.request.kind !== 'ssh') {
      return { marker: 'probe_failed', exitStatus: null, failure: `tool ${tool.name} is no longer an SSH tool in the contract file` };
    }
    const found = await this.keyFor(tool);
    if ('refusal' in found) return { marker: 'probe_failed', exitStatus: null, failure: `no key to ask the host with: ${found.refusal.reason}` };
    const { credential } = found;
    const host = `${tool.request.user}@${tool.request.host}:${tool.request.port}`;
    const deadline = Date.now() + (tool.marker?.startedWaitMs ?? 5_000);
    for (;;) {
      const probe = await this.ssh.probeMarker({ executionId, tool, credential });
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

  close(): Promise<void> {
    return this.ssh.close();
  }
}

/** The SSH channel on the dispatcher kit. */
export const sshKit = defineHostChannel({ name: 'ssh', open: ({ vault, log }) => new SshChannelDriver(new SshDispatcher(), vault, log) });

/** The SSH channel's dispatcher among the dispatchers of a process. */
export const sshChannel = hostingOf(sshKit).channel;

/** `oncegate serve dispatcher-ssh`. */
export const dispatcherSshService = hostingOf(sshKit).service;

/** The SSH dispatcher on its own, outside a Nest application (integration tests drive it by hand). */
export function sshDispatcher(deps: StandaloneDependencies & { readonly ssh: SshDispatcher }): KitDispatcher {
  return hostingOf(sshKit).standalone(new SshChannelDriver(deps.ssh, deps.vault, new Logger('dispatcher-ssh')), deps);
}
