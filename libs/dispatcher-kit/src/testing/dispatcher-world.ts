import { randomBytes } from 'node:crypto';
import { channelNotices } from '../channel-notices';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsoleLogger, Logger, type LoggerService } from '@nestjs/common';
import { parseContractFile, type ToolContract } from '@oncegate/contracts';
import { executionIdFromUlid, executionStream, type ExecutionCommand, type ExecutionId, type ExecutionState } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { isoNow, loadExecution, newUlid, runExecutionCommand, systemClock } from '@oncegate/execution-journal';
import { AttemptSweeper } from '@oncegate/host-recovery';
import { VaultService } from '@oncegate/host-vault';
import { SqliteSealedStore } from '@oncegate/sealed-store';
import { CREDENTIAL_KINDS, initVault, storeCredential, type CredentialKind, type VaultContext } from '@oncegate/vault';
import { hostingOf, type KitChannel } from '../define-channel';
import type { HostChannelDriver } from '../host-channel';
import type { KitDispatcher } from '../kit-dispatcher';
import { channelOptionsReader } from '../channel-options';

/** A credential the world's vault holds; its value is what must never be seen again. */
export interface WorldCredential {
  /** The name the tools give it (`credential_ref`). */
  readonly ref: string;
  /** A vault credential kind: `password` for a channel that declares `credentialKinds`. */
  readonly kind: string;
  /** Where it may be used: `host:port` of the channel's target. */
  readonly bindings: readonly string[];
  /** The secret; the suite looks for it, and every prefix of it, where it must never be. */
  readonly value: string;
  /** For a credential with a user name (`password`, `basic`). */
  readonly username?: string;
}

export interface DispatcherWorldOptions {
  readonly kit: KitChannel;
  /** The text of a contract file (checked with the channel's own section check). */
  readonly contract: string;
  readonly credential?: WorldCredential;
  /**
   * The channel's options as `channels.<name>` of oncegate.yaml would hold them: checked against its options schema,
   * defaults filled in, and handed to every driver the world opens, as a process hosting the channel does.
   */
  readonly options?: Readonly<Record<string, unknown>>;
}

/** A dispatcher of the world, and what it can be made to do to its store. */
export interface WorldDispatcher {
  readonly dispatcher: KitDispatcher;
  readonly id: string;
  /** From now on every write of this dispatcher hangs, as if its process had been killed (what it sent stays sent). */
  kill(): void;
  /** Dies just after its next `Dispatched` is durable: the attempt leaves, and nothing of it is ever recorded. */
  killAfterDispatched(): void;
}

const ATTEMPT_EVENT_HANDLERS: Record<string, keyof Pick<KitDispatcher, 'onOutcomeUnknown' | 'onRetryAttached' | 'onStatusQueried' | 'onMarkerProbed' | 'onAttemptTaskChecked' | 'onReviewResolved'>> = {
  OutcomeUnknown: 'onOutcomeUnknown',
  AttemptTaskChecked: 'onAttemptTaskChecked',
  RetryAttached: 'onRetryAttached',
  StatusQueried: 'onStatusQueried',
  MarkerProbed: 'onMarkerProbed',
  ReviewResolved: 'onReviewResolved',
};

/**
 * One channel's dispatcher on a real journal: a SQLite event store and sealed store and a real vault in a temporary
 * folder. Calls are accepted and authorized as the gateway's front and authorization would; the test hands the
 * events to the channel's dispatcher (the same class its service runs) and plays the agent's retries.
 */
export class DispatcherWorld {
  private readonly captured: string[] = [];
  private readonly drivers: HostChannelDriver[] = [];

  private constructor(
    readonly dataDir: string,
    readonly store: SqliteEventStore,
    readonly sealed: SqliteSealedStore,
    readonly vault: VaultService,
    readonly tools: ReadonlyMap<string, ToolContract>,
    private readonly kit: KitChannel,
    private readonly options: Readonly<Record<string, unknown>>,
  ) {}

  static async open(options: DispatcherWorldOptions): Promise<DispatcherWorld> {
    const { name } = options.kit.definition;
    const channelOptions = channelOptionsReader(options.kit.definition).read({
      source: 'DispatcherWorld options',
      channels: options.options === undefined ? {} : { [name]: { options: options.options, positions: {} } },
    });
    const dataDir = mkdtempSync(join(tmpdir(), `oncegate-${options.kit.definition.name}-world-`));
    const tools = new Map(parseContractFile(options.contract, join(dataDir, 'tools.yaml'), { pluginChannels: hostingOf(options.kit).service.pluginChannels ?? new Map() }).tools.map((tool) => [tool.name, tool]));
    const env = { ONCEGATE_MASTER_KEY: `a master key for the ${options.kit.definition.name} world` };
    const store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
    const sealed = new SqliteSealedStore({ file: join(dataDir, 'sealed.db'), current: { id: 'seal-test', key: randomBytes(32) } });
    const context: VaultContext = { store, dataDir, env, by: 'operator:test' };
    await initVault(context);
    const { credential } = options;
    if (credential !== undefined) {
      await storeCredential(context, { ref: credential.ref, kind: credentialKind(credential.kind), bindings: [...credential.bindings], ...(credential.username ? { username: credential.username } : {}) }, credential.value);
    }
    const vault = new VaultService({ store, dataDir, env });
    await vault.start();
    const world = new DispatcherWorld(dataDir, store, sealed, vault, tools, options.kit, channelOptions);
    Logger.overrideLogger(world.logger());
    return world;
  }

  /** Every line the dispatchers and the kit logged. */
  get logs(): readonly string[] {
    return this.captured;
  }

  private logger(): LoggerService {
    const keep = (level: string) => (message: unknown, ...rest: unknown[]) => void this.captured.push(`${level} ${String(message)} ${rest.map(String).join(' ')}`);
    return { log: keep('log'), error: keep('error'), warn: keep('warn'), debug: keep('debug'), verbose: keep('verbose'), fatal: keep('fatal') };
  }

  /** A new dispatcher of the channel (a process of its own would have one), with a driver opened for it. */
  async dispatcher(id = `dispatcher-${this.kit.definition.name}@${randomBytes(3).toString('hex')}`): Promise<WorldDispatcher> {
    let killed = false;
    let afterDispatched = false;
    const { definition, standalone } = hostingOf(this.kit);
    const { notice } = channelNotices(this.store, systemClock, this.kit.definition.name, id);
    const driver = await definition.open({ log: new Logger(`dispatcher-${this.kit.definition.name}`), tools: this.tools, vault: this.vault, sealed: this.sealed, options: this.options, notice });
    this.drivers.push(driver);
    const store = killable(this.store, () => killed, () => {
      if (afterDispatched) killed = true;
    });
    const dispatcher = standalone(driver, { store, tools: this.tools, sealed: this.sealed, vault: this.vault, dispatcherId: id, clock: systemClock });
    return { dispatcher, id, kill: () => (killed = true), killAfterDispatched: () => (afterDispatched = true) };
  }

  /** Accepts and authorizes a call of `toolName` by `agent:test`; returns its id and its `ExecutionAuthorized`. */
  async call(toolName: string, args: Record<string, unknown>): Promise<{ executionId: ExecutionId; authorized: RecordedEvent }> {
    const tool = this.tools.get(toolName);
    if (tool === undefined) throw new Error(`no tool ${toolName} in the world's contract`);
    const executionId = executionIdFromUlid(newUlid());
    const argumentsRef = (await this.sealed.seal('arguments', executionId, Buffer.from(JSON.stringify(args)))).ref;
    const now = isoNow(systemClock);
    await this.append(executionId, {
      type: 'AcceptExecution',
      executionId,
      now,
      record: { actor: 'agent:test', tool: tool.name, channel: tool.channel, target: tool.target, credential_ref: tool.credentialRef, method: null, arguments: {}, intent_scope: 'actor' } as never,
      fingerprint: `hmac-sha256:k1:${randomBytes(32).toString('hex')}`,
      operationClass: tool.operationClass,
      intentScope: { kind: 'actor' },
      correlationWindowMs: 60_000,
      redeliveryGraceMs: 0,
      attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: tool.limits.connectTimeoutMs + tool.limits.responseTimeoutMs, markerBeforeWork: tool.marker?.writtenBeforeWork ?? false },
      correlation: { jsonRpcId: 1, sessionId: null, transport: 'streamable-http' } as never,
      argumentsRef,
    });
    await this.append(executionId, { type: 'AuthorizeExecution', executionId, now: isoNow(systemClock), basis: 'policy' });
    return { executionId, authorized: (await this.last(executionId, 'ExecutionAuthorized'))! };
  }

  /** The agent calls again after losing the answer: `RetryAttached`. */
  async retry(executionId: ExecutionId): Promise<RecordedEvent> {
    await this.append(executionId, { type: 'AttachRetry', executionId, now: isoNow(systemClock), correlation: { jsonRpcId: 2, sessionId: null, transport: 'streamable-http' } as never });
    return (await this.last(executionId, 'RetryAttached'))!;
  }

  /** An operator resolves the execution's review (`oncegate review resolve`, `--resend` with `resend`). */
  async resolveReview(
    executionId: ExecutionId,
    resolution: 'completed' | 'not_executed' | 'abandoned',
    reason: string,
    { resend = false, by = 'operator:test' }: { resend?: boolean; by?: string } = {},
  ): Promise<RecordedEvent> {
    await this.append(executionId, { type: 'ResolveReview', executionId, now: isoNow(systemClock), resolution, by, reason, ...(resend ? { resend } : {}) });
    return (await this.last(executionId, 'ReviewResolved'))!;
  }

  /** Hands the first attempt to `dispatcher` and waits for its outcome to be recorded. */
  async dispatch(executionId: ExecutionId, dispatcher: KitDispatcher): Promise<void> {
    await dispatcher.onAuthorized((await this.last(executionId, 'ExecutionAuthorized'))!);
    await dispatcher.drain();
  }

  /**
   * Hands the execution's latest recovery event to `dispatcher` until nothing follows from it (settled, held for
   * review, or waiting for the agent); returns the state then.
   */
  async recover(executionId: ExecutionId, dispatcher: KitDispatcher): Promise<ExecutionState> {
    for (let step = 0; step < 10; step += 1) {
      const events = await this.events(executionId);
      const last = events.at(-1)!;
      const handler = ATTEMPT_EVENT_HANDLERS[last.type];
      if (handler === undefined) break;
      await dispatcher[handler](last);
      await dispatcher.drain();
      if ((await this.events(executionId)).length === events.length) break;
    }
    return (await loadExecution(this.store, executionId)).state;
  }

  /** Settles attempts whose dispatcher is gone (no liveness lease): what the sweeper of a live process does. */
  async sweep(): Promise<void> {
    await new AttemptSweeper({ store: this.store, clock: systemClock, ownDispatcherIds: new Set(), everyMs: 60_000 }).sweep();
  }

  events(executionId: ExecutionId): Promise<RecordedEvent[]> {
    return this.store.readStream(executionStream(executionId));
  }

  async last(executionId: ExecutionId, type: string): Promise<RecordedEvent | undefined> {
    return (await this.events(executionId)).findLast((event) => event.type === type);
  }

  /** The body of the result the last `OutcomeObserved` sealed (what the agent reads), or `undefined`. */
  async resultBody(executionId: ExecutionId): Promise<string | undefined> {
    const ref = ((await this.last(executionId, 'OutcomeObserved'))?.data as { resultRef?: unknown } | undefined)?.resultRef;
    if (typeof ref !== 'string') return undefined;
    const opened = await this.sealed.open(ref);
    return opened === undefined ? undefined : (JSON.parse(opened.plaintext.toString('utf8')) as { body: string }).body;
  }

  async state(executionId: ExecutionId): Promise<ExecutionState> {
    return (await loadExecution(this.store, executionId)).state;
  }

  /** Everything the journal holds and every result sealed, as text: where a secret must never be. */
  async everythingWritten(): Promise<string> {
    const parts: string[] = [];
    for (let after = 0; ; ) {
      const page = await this.store.readAll({ after, maxCount: 1000 });
      for (const event of page.events) {
        parts.push(JSON.stringify(event));
        const ref = (event.data as { resultRef?: unknown }).resultRef;
        if (typeof ref === 'string') parts.push((await this.sealed.open(ref))?.plaintext.toString('utf8') ?? '');
      }
      if (page.events.length === 0) break;
      after = page.lastPosition;
    }
    return parts.join('\n');
  }

  private async append(executionId: ExecutionId, command: ExecutionCommand): Promise<void> {
    await runExecutionCommand(this.store, executionId, () => command, { actor: 'agent:test' }, systemClock);
  }

  async close(): Promise<void> {
    Logger.overrideLogger(new ConsoleLogger());
    await this.vault.stop();
    for (const driver of this.drivers) await driver.close?.().catch(() => undefined);
    await this.sealed.close();
    await this.store.close();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/**
 * The store as a killed process sees it: once `killed()`, its writes never return (and never land). `dispatched` is
 * told when an append holding a `Dispatched` has landed.
 */
function killable(store: EventStore, killed: () => boolean, dispatched: () => void): EventStore {
  const hang = () => new Promise<never>(() => undefined);
  const holdsDispatched = (property: string | symbol, args: unknown[]) => {
    const events = property === 'appendMany' ? (args[0] as Array<{ events: Array<{ type: string }> }>).flatMap((entry) => entry.events) : (args[1] as Array<{ type: string }>);
    return property !== 'storeCheckpoint' && events.some((event) => event.type === 'Dispatched');
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (property === 'appendToStream' || property === 'appendMany' || property === 'storeCheckpoint') {
        return async (...args: unknown[]) => {
          if (killed()) return hang();
          const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (holdsDispatched(property, args)) dispatched();
          return result;
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}

function credentialKind(kind: string): CredentialKind {
  if (!(CREDENTIAL_KINDS as readonly string[]).includes(kind)) throw new Error(`'${kind}' is not a vault credential kind (${CREDENTIAL_KINDS.join(', ')})`);
  return kind as CredentialKind;
}
