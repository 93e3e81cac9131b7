import type { Logger } from '@nestjs/common';
import type { ToolContract, ToolLimits, PluginSectionCheck } from '@oncegate/contracts';
import type { DefiniteOutcome, ExecutionId, ExecutionState, OperationClass, UnknownOutcomeReason } from '@oncegate/domain';
import type { SealedStore } from '@oncegate/sealed-store';
import type { DispatchRefusal } from './channel-dispatcher';
import type { PreparedCall } from '@oncegate/service-host';
import type { MarkerFinding } from '@oncegate/host-recovery';
import type { CredentialKind } from '@oncegate/vault';
import type { VaultService } from '@oncegate/host-vault';

/*
 * The dispatcher kit's public API: what a team implements to add a channel (docs/dispatchers.md). The kit owns the
 * rest — the subscription and its consumer group, `Dispatched` durable before anything is sent, attempt deadlines,
 * recovery by operation class, sealing results, fetching and wiping the credential, hiding secrets in results.
 */

/** What a channel is: its name in contracts, what it keeps its promise for, and how its connections open. */
export interface ChannelDefinition {
  /** The name tools declare (`channel: sql`), `[a-z][a-z0-9-]*`; its service is `dispatcher-<name>`. */
  readonly name: string;
  /**
   * The operation classes whose recovery rule this channel supports with evidence (docs/design.md section 6); a tool
   * of another class on this channel is refused when the contract file is checked. Omitted: every class.
   */
  readonly classes?: readonly OperationClass[];
  /**
   * How the tool's `plugin:` section is checked when the contract file is loaded by a process hosting the channel:
   * each problem reported at a path inside the section is shown as `file:line:column path: reason`. `schema` (the
   * section's JSON Schema, published by `oncegate channels schema`) is checked first; `check` then says what a schema
   * cannot.
   */
  readonly contract?: ChannelContract;
  /**
   * The JSON Schema of the channel's options (`channels.<name>` in oncegate.yaml, published by `oncegate channels
   * schema`): a process hosting the channel checks its entry against it, fills in the schema's defaults and hands the
   * result to `open` as `ChannelContext.options`. Without it, an entry for the channel is refused.
   */
  readonly options?: { readonly schema: Record<string, unknown> };
  /**
   * The vault credential kinds a tool of this channel may name (`credential_ref`). The kit checks the kind and the
   * binding to the section's `host` and `port` before `Dispatched`, decrypts the secret once just before `send`,
   * hands it over as `ChannelAttempt.secret`, zero-fills it after, and hides it in whatever the attempt returns.
   */
  readonly credentialKinds?: readonly Extract<CredentialKind, 'password'>[];
  /** Opens the channel's connections in this process; called once when its dispatcher starts. */
  open(context: ChannelContext): ChannelDriver | Promise<ChannelDriver>;
}

/** A channel's `plugin:` section: its JSON Schema, its own check, or both (the check runs once the schema passes). */
export type ChannelContract =
  | { readonly check: PluginSectionCheck; readonly schema?: Record<string, unknown> }
  | { readonly schema: Record<string, unknown>; readonly check?: PluginSectionCheck };

/** What a channel is given when it opens. */
export interface ChannelContext {
  /** Logs under `dispatcher-<name>`; never log a secret or an argument marked secret. */
  readonly log: Logger;
  /** The contracts of this process, by tool name. */
  readonly tools: ReadonlyMap<string, ToolContract>;
  /**
   * The vault, for channels that apply a credential in their own way (the built-in HTTP and SSH channels). A
   * channel that declares `credentialKinds` gets its secret from the kit and needs none of this.
   */
  readonly vault: VaultService;
  readonly sealed: SealedStore;
  /** The channel's `channels.<name>` entry of oncegate.yaml, checked against `options.schema` with its defaults; `{}` without one. */
  readonly options: Readonly<Record<string, unknown>>;
}

/** One attempt of one execution, as the channel sends it. */
export interface ChannelAttempt {
  readonly executionId: ExecutionId;
  /** 1 for the first attempt; a recovery attempt has the next number and the same execution id. */
  readonly attempt: number;
  readonly operationClass: OperationClass;
  readonly tool: ToolContract;
  /** The tool's `plugin:` section as the contract file has it (empty for the built-in channels). */
  readonly section: Readonly<Record<string, unknown>>;
  /** The call's arguments, opened once per execution. */
  readonly args: Readonly<Record<string, unknown>>;
  /** The connect and response timeouts of the contract (`limits`), and the largest result kept. */
  readonly limits: ToolLimits;
  /** The credential's secret when the tool names one and the channel declares `credentialKinds`; wiped after the call. */
  readonly secret?: Buffer;
  /** The prepared call (built-in channels keep their rendering on it). */
  readonly call: PreparedCall;
  readonly state: ExecutionState;
}

/**
 * What one attempt came to. `observed`: the target answered, a definite outcome: `succeeded`, or `failed` for an error
 * answer — the execution is `completed` either way and the agent is told an error answer with `isError`. `not_sent`:
 * certainly nothing reached the target (the execution `failed`, source `not_sent`). `unknown`: the request may have
 * taken effect and no answer says whether — recovery by class decides what follows, never the channel.
 */
export type SendOutcome =
  | {
      readonly kind: 'observed';
      readonly outcome: DefiniteOutcome;
      /**
       * What the agent reads as the result, whole: the kit hides the secrets in it, then cuts it to
       * `limits.response_bytes` (a channel that cut it first could leave the start of a secret at its cut).
       */
      readonly body: string;
      readonly contentType?: string | null;
      readonly encoding?: 'utf8' | 'base64';
      readonly status?: number | null;
      readonly exitCode?: number | null;
      /** The built-in channels cut and hide their bodies themselves, as they stream them. */
      readonly truncated?: boolean;
    }
  | { readonly kind: 'not_sent'; readonly reason: string; readonly text?: string }
  | { readonly kind: 'unknown'; readonly reason: UnknownOutcomeReason };

/** What a status query found (conditional writes): may the write be sent again, and what was seen (no secret). */
export interface StatusFinding {
  readonly preconditionHolds: boolean;
  readonly observedStatus: string | null;
}

/**
 * The channel's side of dispatching. `send` must resolve (never reject) within the contract's timeouts with what
 * happened; evidence after an unknown outcome comes from `queryStatus` (conditional writes) or `probeMarker`
 * (remote commands), whichever the channel's classes need. Without them, the kit records a finding that proves
 * nothing, and an unknown outcome of such a class is held for review.
 */
export interface ChannelDriver {
  /** Why this call must not be sent (checked before `Dispatched`; a refusal of a first attempt is a denial). */
  preflight?(attempt: Omit<ChannelAttempt, 'secret'>): Promise<DispatchRefusal | undefined>;
  send(attempt: ChannelAttempt): Promise<SendOutcome>;
  queryStatus?(attempt: ChannelAttempt): Promise<StatusFinding>;
  probeMarker?(attempt: ChannelAttempt): Promise<MarkerFinding>;
  /** Closes the channel's connections; attempts in flight have recorded their outcome by then. */
  close?(): Promise<void>;
}

export type { DispatchRefusal, MarkerFinding };
