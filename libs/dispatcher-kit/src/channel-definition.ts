import type { PluginSectionCheck } from '@oncegate/contracts';
import type { DefiniteOutcome, ExecutionId, OperationClass, TaskFinding, UnknownOutcomeReason } from '@oncegate/domain';

/*
 * The dispatcher kit's public API: what a team implements to add a channel (docs/dispatchers.md). The kit owns the
 * rest — the subscription and its consumer group, `Dispatched` durable before anything is sent, attempt deadlines,
 * recovery by operation class, sealing results, fetching and wiping the credential, hiding secrets in results.
 * Every type here is the kit's own: a channel sees no part of the host (its services, its vault, the execution's
 * state), so the host can change without a channel noticing.
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
  readonly credentialKinds?: readonly CredentialKind[];
  /** Opens the channel's connections in this process; called once when its dispatcher starts. */
  open(context: ChannelContext): ChannelDriver | Promise<ChannelDriver>;
}

/** The vault credential kinds a channel may take: `password` (a secret string, with an optional user name). */
export type CredentialKind = 'password';

/** Where a channel logs: under `dispatcher-<name>`, in the process's log format. Never log a secret or a secret argument. */
export interface ChannelLog {
  /** What the channel did, for an operator following along. */
  log(message: string): void;
  /** Something went wrong that the channel recovered from or reported as an outcome. */
  warn(message: string): void;
  /** Something went wrong that the channel could not handle. */
  error(message: string): void;
}

/** A tool of the channel as the contract file declares it: what a channel needs of it. */
export interface ChannelTool {
  /** The MCP tool name. */
  readonly name: string;
  /** The logical target recorded with every call. */
  readonly target: string;
  /** The tool's class (`class:`), which decides recovery after an unknown outcome. */
  readonly operationClass: OperationClass;
  /** The vault credential the tool names (`credential_ref`), `null` when none; never the credential itself. */
  readonly credentialRef: string | null;
  /** Arguments the contract marks secret: the kit hides their values in results; never log them. */
  readonly secretArguments: readonly string[];
  /** The tool's `limits`. */
  readonly limits: ChannelLimits;
}

/** The contract's `limits` of a tool: its timeouts, and the largest result kept. */
export interface ChannelLimits {
  /** Largest result body kept, in bytes; the kit cuts a longer one (after hiding secrets). */
  readonly responseBytes: number;
  /** How long opening a connection to the target may take. */
  readonly connectTimeoutMs: number;
  /** How long an attempt may wait for the target's answer; past it, `send` resolves with an unknown outcome. */
  readonly responseTimeoutMs: number;
}

/** What a channel is given when it opens. */
export interface ChannelContext {
  /** Logs under `dispatcher-<name>`. */
  readonly log: ChannelLog;
  /** The tools of this channel in this process's contract file, by name. */
  readonly tools: ReadonlyMap<string, ChannelTool>;
  /** The channel's `channels.<name>` entry of oncegate.yaml, checked against `options.schema` with its defaults; `{}` without one. */
  readonly options: Readonly<Record<string, unknown>>;
  /**
   * Records something the channel noticed about its target outside any one call (an upstream said its tools changed,
   * a tool became held): a `ChannelNoticed` event on the stream `channel-<name>`, which investigations, projections
   * and the bus read. Never throws, never waits; a notice that breaks the rules (below) is logged, not recorded.
   */
  notice(notice: ChannelNotice): void;
}

/** What a channel noticed: never a secret (the kit cannot tell one in it). */
export interface ChannelNotice {
  /** What kind of notice, `[a-z][a-z0-9_]*`, at most 64 characters (`upstream_tools_changed`). */
  readonly kind: string;
  /** In words, for an operator; cut to 500 characters. */
  readonly message: string;
  /** The facts, a JSON object of at most 8 KiB. */
  readonly details?: Readonly<Record<string, unknown>>;
}

/** A channel's `plugin:` section: its JSON Schema, its own check, or both (the check runs once the schema passes). */
export type ChannelContract =
  | { readonly check: PluginSectionCheck; readonly schema?: Record<string, unknown> }
  | { readonly schema: Record<string, unknown>; readonly check?: PluginSectionCheck };

/** One attempt of one execution, as the channel sends it. */
export interface ChannelAttempt {
  /** The execution's id: the same on every attempt, the natural idempotency key at a target that keeps one. */
  readonly executionId: ExecutionId;
  /** 1 for the first attempt; a recovery attempt has the next number and the same execution id. */
  readonly attempt: number;
  /** The execution's class as it was accepted (the contract's, at the time of the call). */
  readonly operationClass: OperationClass;
  /** The tool called. */
  readonly tool: ChannelTool;
  /** The tool's `plugin:` section as the contract file has it (empty for the built-in channels). */
  readonly section: Readonly<Record<string, unknown>>;
  /** The call's arguments, opened once per execution. */
  readonly args: Readonly<Record<string, unknown>>;
  /** The contract's timeouts and the largest result kept (the tool's `limits`). */
  readonly limits: ChannelLimits;
  /** The credential's secret when the tool names one and the channel declares `credentialKinds`; wiped after the call. */
  readonly secret?: Buffer;
  /**
   * Tells how far the target says the work is, while `send` runs (an upstream's progress notifications): recorded in
   * the execution's stream (`AttemptProgressed`) and told to an agent waiting on the call that asked for progress. The
   * kit writes the first report at once and then the latest one a second, drops a report that does not move forward,
   * hides secrets in the message and cuts it to 200 characters; after `send` resolved (and outside `send`) it does
   * nothing. Never throws, never waits.
   */
  progress(report: ProgressReport): void;
  /**
   * Records that the target runs this attempt as a task of its own, with the reference to resume it by (an upstream MCP
   * server's task): an `AttemptTaskStarted` event, durable when the promise resolves with `true`. Call it as soon as
   * the target answers with the reference, before waiting for the task's outcome: should that outcome be lost (the
   * connection, this process), recovery hands the reference to `resumeTask` — on whichever instance of the channel
   * takes it — and records the outcome the target gives. The reference is a JSON object of at most 2 KiB and must hold
   * no secret (it is journaled as given). One per attempt; during `send` only. Resolves `false` when it could not be
   * recorded (the attempt is no longer in flight, the store refused it, a second reference), never rejects.
   */
  recordTask(task: Readonly<Record<string, unknown>>): Promise<boolean>;
}

/**
 * What resuming an attempt's task came to: the target's answer (`observed`, recorded as the attempt's outcome with the
 * secrets hidden and the body cut as for `send`), or why there is none yet (`unsettled`, with a reason shown to the
 * operator: no secret; cut to 200 characters).
 */
export type ResumedTask = Extract<SendOutcome, { kind: 'observed' }> | { readonly kind: 'unsettled'; readonly finding: TaskFinding; readonly reason: string };

/** What a channel says of an attempt's progress, as the target reported it. */
export interface ProgressReport {
  /** How far the work is, as the target counts it; only growing values are recorded. */
  readonly progress: number;
  /** Out of how much, when the target says. */
  readonly total?: number;
  /** What the target says it is doing. */
  readonly message?: string;
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
       * `limits.responseBytes` (a channel that cut it first could leave the start of a secret at its cut).
       */
      readonly body: string;
      readonly contentType?: string | null;
      readonly encoding?: 'utf8' | 'base64';
      readonly status?: number | null;
      readonly exitCode?: number | null;
      /** Set when the channel already cut the body (the built-in channels cut and hide as they stream). */
      readonly truncated?: boolean;
    }
  | { readonly kind: 'not_sent'; readonly reason: string; readonly text?: string }
  | { readonly kind: 'unknown'; readonly reason: UnknownOutcomeReason };

/** What a status query found (conditional writes): may the write be sent again, and what was seen (no secret). */
export interface StatusFinding {
  /** Whether the write's precondition still holds at the target: only then may it be sent again. */
  readonly preconditionHolds: boolean;
  /** What the query saw, shown to the operator (hidden secrets, cut to 200 characters); `null` when nothing. */
  readonly observedStatus: string | null;
}

/**
 * What a marker probe found (remote commands): the marker the command left at the target, the exit status it
 * recorded, and why the probe could not tell when it could not (`probe_failed`, with `failure`).
 */
export interface MarkerFinding {
  /** `completed`: the command ran to its end; `started`: it began and did not finish; `absent`: it never began. */
  readonly marker: 'completed' | 'started' | 'absent' | 'probe_failed';
  /** The exit status the marker recorded (`completed`), else `null`. */
  readonly exitStatus: number | null;
  /** The attempt named in the marker. */
  readonly markerAttempt?: number | null;
  /** Required with `probe_failed`: why nothing could be read (no secret). */
  readonly failure?: string;
  /** Where the command's output was kept on the target, when it was. */
  readonly keptOutput?: { readonly host: string; readonly paths: readonly string[] } | null;
}

/** Why an attempt must not be sent, found before `Dispatched` is written; recorded as the denial's basis. */
export interface DispatchRefusal {
  /** `vault_locked`: no credential can be read now; `credential_unresolved`: this call's credential cannot be used. */
  readonly basis: 'vault_locked' | 'credential_unresolved';
  /** Names the credential and the target; never a value. */
  readonly reason: string;
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
  /** Sends one attempt and tells what came of it; resolves within the attempt's limits, never rejects. */
  send(attempt: ChannelAttempt): Promise<SendOutcome>;
  /** Conditional writes: reads the target's current state after an unknown outcome (the status query). */
  queryStatus?(attempt: ChannelAttempt): Promise<StatusFinding>;
  /** Remote commands: reads the marker the command leaves at the target, after an unknown outcome. */
  probeMarker?(attempt: ChannelAttempt): Promise<MarkerFinding>;
  /**
   * After an unknown outcome of an attempt that recorded a task (`ChannelAttempt.recordTask`), whatever its class: asks
   * the target for that task's outcome, waiting at most the attempt's response timeout. Resolves, never rejects (a
   * rejection is recorded as `unreachable`).
   */
  resumeTask?(attempt: ChannelAttempt, task: Readonly<Record<string, unknown>>): Promise<ResumedTask>;
  /** Closes the channel's connections; attempts in flight have recorded their outcome by then. */
  close?(): Promise<void>;
}
