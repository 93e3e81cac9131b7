import type { ToolContract } from '@oncegate/contracts';
import type { ExecutionState } from '@oncegate/domain';
import type { VaultService } from '@oncegate/host-vault';
import type { SealedStore } from '@oncegate/sealed-store';
import type { PreparedCall } from '@oncegate/service-host';
import type { ChannelAttempt, ChannelContext, ChannelDefinition, DispatchRefusal, MarkerFinding, ResumedTask, SendOutcome, StatusFinding } from './channel-definition';

/*
 * What the built-in channels of this repository see beyond the public API: the host's own contract, prepared call,
 * execution state, vault and sealed store. A channel written on the package sees none of it (channel-definition.ts);
 * every public definition is also a host definition, so one dispatcher runs both.
 */

/** An attempt with the host's view of the call. */
export interface HostAttempt extends ChannelAttempt {
  readonly tool: ToolContract;
  /** The prepared call (the HTTP channel keeps its rendering on it). */
  readonly call: PreparedCall;
  readonly state: ExecutionState;
}

/** What a built-in channel is given when it opens: the public context, the contracts whole, the vault and the sealed store. */
export interface HostChannelContext extends ChannelContext {
  readonly tools: ReadonlyMap<string, ToolContract>;
  /** For channels that apply a credential in their own way (HTTP, SSH); a channel declaring `credentialKinds` needs none. */
  readonly vault: VaultService;
  readonly sealed: SealedStore;
}

/** A driver that reads the host's view of each attempt. */
export interface HostChannelDriver {
  preflight?(attempt: Omit<HostAttempt, 'secret'>): Promise<DispatchRefusal | undefined>;
  send(attempt: HostAttempt): Promise<SendOutcome>;
  queryStatus?(attempt: HostAttempt): Promise<StatusFinding>;
  probeMarker?(attempt: HostAttempt): Promise<MarkerFinding>;
  resumeTask?(attempt: HostAttempt, task: Readonly<Record<string, unknown>>): Promise<ResumedTask>;
  close?(): Promise<void>;
}

/** A channel definition whose driver opens on the host's context. */
export interface HostChannelDefinition extends Omit<ChannelDefinition, 'open'> {
  open(context: HostChannelContext): HostChannelDriver | Promise<HostChannelDriver>;
}
