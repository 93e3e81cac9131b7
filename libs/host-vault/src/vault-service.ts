import { Logger } from '@nestjs/common';
import type { HttpCredential, HttpCredentialBuffer } from '@oncegate/channel-http';
import type { SshCredential } from '@oncegate/channel-ssh';
import { vaultStream } from '@oncegate/domain';
import type { EventStore, RecordedEvent, Subscription } from '@oncegate/event-store';
import { bindingMatches, describeTarget, parseBinding, type BindingTarget } from '@oncegate/vault';
import { vaultCrypto } from '@oncegate/vault';
import { channelOf, metadataAad, type CredentialMetadata } from '@oncegate/vault';
import {
  bindingRefusal,
  CredentialBindingError,
  CredentialUnavailableError,
  NOT_INITIALISED,
  VaultKeyError,
  VaultLockedError,
} from '@oncegate/vault';
import { VaultFile, vaultFilePath } from '@oncegate/vault';
import { EMPTY_VAULT_HISTORY, evolveVault, VAULT_EVENT_TYPES, type StoredCredential, type VaultHistory } from '@oncegate/vault';
import { masterKeyOf, unwrapDataKey } from '@oncegate/vault';

/** No vault in the data folder: nothing to lock, and no credential to hand out. */
const ABSENT: VaultState = { initialized: false, locked: false, reason: NOT_INITIALISED, since: null };

/** Why credential `ref` cannot be used when there is no vault, and what to run. */
export function noVault(ref: string): string {
  return `there is no vault in this data folder: run oncegate vault init, then oncegate vault set ${ref} …`;
}

/** The vault as this gateway process sees it. */
export interface VaultState {
  readonly initialized: boolean;
  /**
   * The vault stops every call: locked by an operator, or this process cannot open it. False when unlocked and
   * this process holds the opened data key, and false when there is no vault at all: then no credential
   * resolves, so only the tools that need one are refused.
   */
  readonly locked: boolean;
  /** Why it is locked, or who unlocked it. */
  readonly reason: string;
  /** When the journal's last initialise / lock / unlock happened; `null` before the vault exists. */
  readonly since: string | null;
}

/** A credential's metadata as the journal holds it; never its value. */
export type CredentialDescription = StoredCredential;

export type BindingCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export type { BindingTarget } from '@oncegate/vault';

/**
 * A binding check that allowed credential `ref` (at `version`) to go to `url`, made when the vault's journal was at
 * `vaultPosition`: while the journal has not moved since, the same credential may go to the same URL unchecked.
 */
export interface HttpBindingChecked {
  readonly ref: string;
  readonly version: number;
  readonly url: string;
  readonly vaultPosition: number;
}

export interface VaultServiceOptions {
  readonly store: EventStore;
  readonly dataDir: string;
  /** Where the master key comes from (ONCEGATE_MASTER_KEY, ONCEGATE_MASTER_KEY_FILE). Default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
}

/** The store's answer to whether a vault event was committed since the last read (`EventStore.notifiedSince`). */
interface NotifiedAnswer {
  readonly told: ReturnType<NonNullable<EventStore['notifiedSince']>> | undefined;
}

/**
 * The gateway's side of the vault. It follows the vault's journal (appended by `oncegate vault …`, in this or
 * another process): it is unlocked only while the journal says so and this process could open the data key
 * with its master key. On `VaultLocked` the data key is zero-filled and dropped; on `VaultUnlocked` it is
 * opened again. Credential values are decrypted only inside `httpCredentialBuffer` / `httpCredential` /
 * `sshCredential`, at dispatch, after catching up with the journal, and only for a target the credential is
 * bound to.
 */
export class VaultService {
  private readonly log = new Logger('vault');
  private readonly store: EventStore;
  private readonly dataDir: string;
  private readonly env: NodeJS.ProcessEnv;
  private history: VaultHistory = EMPTY_VAULT_HISTORY;
  private dataKey: Buffer | undefined;
  /** Why this process cannot open the data key while the journal says unlocked. */
  private keyProblem: string | undefined;
  private file: VaultFile | undefined;
  private current: VaultState = ABSENT;
  private readonly listeners = new Set<(state: VaultState) => void>();
  /** How far the journal has been read, and the last event applied (so none is applied twice). */
  private position = 0;
  private applied = 0;
  /** The last revision of the vault's stream folded (-1: none). */
  private revision = -1;
  /**
   * Every position up to this one was committed when the vault's stream was last read, so that read holds every vault
   * event up to it: the store's notifications need only say whether one came after (see `readNew`).
   */
  private checkedThrough = 0;
  /** Journal reading, key opening and decryption run one at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Work queued by `serially` and not yet settled. */
  private serialWork = 0;
  private subscription: Subscription | undefined;

  constructor(options: VaultServiceOptions) {
    this.store = options.store;
    this.dataDir = options.dataDir;
    this.env = options.env ?? process.env;
  }

  /** Reads the vault's journal, opens the data key if the vault is unlocked, then follows the journal live. */
  async start(): Promise<void> {
    await this.serially(async () => {
      // Everything up to `head` is read below; the subscription follows what comes after it.
      const head = await this.store.headPosition();
      await this.readNew(false);
      this.position = Math.max(this.position, head);
      await this.reconcile(false);
    });
    this.subscription = this.store.subscribeToAll((event) => this.serially(() => this.follow(event)), {
      from: { after: this.position },
      // The types too, so that only a vault commit wakes it, not every call's.
      filter: { streamPrefixes: [vaultStream()], eventTypes: VAULT_EVENT_TYPES },
    });
    void this.subscription.done.catch((error: unknown) => this.log.error(`following the vault journal stopped: ${(error as Error).message}`));
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    await this.serially(async () => {
      this.dropKey();
      this.file?.close();
      this.file = undefined;
    });
  }

  state(): VaultState {
    return this.current;
  }

  /** The state after catching up with the vault's journal: a lock appended a moment ago counts. */
  refresh(): Promise<VaultState> {
    // Asked before every authorization and every credential use: with nothing of the vault's under way and the store
    // telling at once that no vault event was committed since the last read, the state stands as it is.
    // The store is asked once: a store that waits for a notification (PostgreSQL) is waited for by the read below.
    const asked = this.serialWork === 0 ? this.askNotified() : undefined;
    if (asked !== undefined && !(asked.told instanceof Promise) && asked.told?.changed === false) return Promise.resolve(this.current);
    return this.serially(async () => {
      await this.readNew(true, false, asked);
      return this.current;
    });
  }

  /** Calls `listener` at each transition between locked and unlocked; returns a function that stops it. */
  onChange(listener: (state: VaultState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The credential's metadata (kind, bindings, approval, version…), locked or not; `undefined` when unknown. */
  describe(ref: string): CredentialDescription | undefined {
    return this.history.credentials.get(ref);
  }

  /** The position of the last vault event this process applied: it moves with every lock, unlock, set or removal. */
  journalPosition(): number {
    return this.applied;
  }

  /**
   * What `checkBinding` allowed, for an HTTP `url`, stamped with the journal position it held at; `undefined` when it
   * did not allow it.
   */
  checkedHttpBinding(ref: string, url: string): HttpBindingChecked | undefined {
    const entry = this.history.credentials.get(ref);
    if (entry === undefined || !this.checkBinding(ref, { channel: 'http', url }).ok) return undefined;
    return { ref, version: entry.version, url, vaultPosition: this.applied };
  }

  /** May the credential be sent to `target`? The reason names the credential, the target and its bindings. */
  checkBinding(ref: string, target: BindingTarget): BindingCheck {
    const entry = this.history.credentials.get(ref);
    if (entry === undefined) return { ok: false, reason: `there is no credential '${ref}' in the vault` };
    if (channelOf(entry.kind) !== target.channel) {
      return { ok: false, reason: `credential '${ref}' is a ${entry.kind} credential; a ${target.channel} tool cannot use it` };
    }
    const bound = entry.bindings.some((text) => bindingMatches(parseBinding(text, target.channel), target));
    return bound ? { ok: true } : { ok: false, reason: bindingRefusal(ref, describeTarget(target), entry.bindings) };
  }

  /**
   * The headers that carry the credential to `url`.
   *
   * @throws VaultLockedError, CredentialUnavailableError, CredentialBindingError
   */
  httpCredential(ref: string, url: string): Promise<HttpCredential> {
    return this.reveal(ref, { channel: 'http', url }, (metadata, value) => {
      const text = value.toString('utf8');
      switch (metadata.kind) {
        // `secrets`: the raw value is hidden wherever the dispatcher returns text, also when a target echoes it.
        case 'bearer':
          return { headers: { Authorization: `Bearer ${text}` }, secrets: [text] };
        case 'basic': {
          const pair = `${metadata.username ?? ''}:${text}`;
          return { headers: { Authorization: `Basic ${Buffer.from(pair, 'utf8').toString('base64')}` }, secrets: [pair, text] };
        }
        case 'header':
          return { headers: { [metadata.header ?? 'Authorization']: metadata.scheme ? `${metadata.scheme} ${text}` : text }, secrets: [text] };
        case 'ssh_key':
          throw new CredentialUnavailableError(ref, 'it is an SSH key');
        case 'password':
          throw new CredentialUnavailableError(ref, 'it is a password for a plugin channel');
        default:
          return metadata.kind satisfies never;
      }
    });
  }

  /**
   * Everything `httpCredentialBuffer` checks before it decrypts, after catching up with the journal — the vault
   * unlocked, the credential there, its current version in the vault file, bound to `url` — without decrypting.
   * `checked`: a binding check made earlier for the same URL, trusted while the journal has not moved since.
   *
   * @returns the binding check that now holds
   * @throws VaultLockedError, CredentialUnavailableError, CredentialBindingError
   */
  admitHttp(ref: string, url: string, checked?: HttpBindingChecked): Promise<HttpBindingChecked> {
    return this.serially(async () => {
      const { entry } = await this.locate(ref, { channel: 'http', url }, checked);
      return { ref, version: entry.version, url, vaultPosition: this.applied };
    });
  }

  /**
   * The credential header for `url`, its value in a Buffer the caller zero-fills once the request is written (the
   * HTTP dispatcher does so as soon as it has built the header). Decrypted here, after the same checks as
   * `admitHttp`; `checked` skips the binding check only while the journal has not moved since it was made.
   *
   * @throws VaultLockedError, CredentialUnavailableError, CredentialBindingError
   */
  httpCredentialBuffer(ref: string, url: string, checked?: HttpBindingChecked): Promise<HttpCredentialBuffer> {
    return this.reveal(
      ref,
      { channel: 'http', url },
      (metadata, value) => {
        switch (metadata.kind) {
          case 'bearer':
            return { header: 'Authorization', value: Buffer.concat([Buffer.from('Bearer ', 'utf8'), value]), secrets: [Buffer.from(value)] };
          case 'basic': {
            const pair = Buffer.concat([Buffer.from(`${metadata.username ?? ''}:`, 'utf8'), value]);
            try {
              // base64 of the pair passes through one V8 string: Buffer has no encoder into bytes.
              return { header: 'Authorization', value: Buffer.from(`Basic ${pair.toString('base64')}`, 'latin1'), secrets: [Buffer.from(pair), Buffer.from(value)] };
            } finally {
              pair.fill(0);
            }
          }
          case 'header': {
            const prefix = metadata.scheme ? Buffer.from(`${metadata.scheme} `, 'utf8') : Buffer.alloc(0);
            return { header: metadata.header ?? 'Authorization', value: Buffer.concat([prefix, value]), secrets: [Buffer.from(value)] };
          }
          case 'ssh_key':
            throw new CredentialUnavailableError(ref, 'it is an SSH key');
          case 'password':
            throw new CredentialUnavailableError(ref, 'it is a password for a plugin channel');
          default:
            return metadata.kind satisfies never;
        }
      },
      checked,
    );
  }

  /**
   * The private key to log in to `host:port` with.
   *
   * @throws VaultLockedError, CredentialUnavailableError, CredentialBindingError
   */
  sshCredential(ref: string, host: string, port: number): Promise<SshCredential> {
    return this.reveal(ref, { channel: 'ssh', host, port }, (_metadata, value) => ({ privateKey: value.toString('utf8') }));
  }

  /**
   * The secret of a `password` credential to log in to `host:port` with (a plugin channel's server), as a copy the
   * caller zero-fills once it is used.
   *
   * @throws VaultLockedError, CredentialUnavailableError, CredentialBindingError
   */
  secret(ref: string, host: string, port: number): Promise<Buffer> {
    return this.reveal(ref, { channel: 'host', host, port }, (metadata, value) => {
      if (metadata.kind !== 'password') throw new CredentialUnavailableError(ref, `it is a ${metadata.kind} credential, not a password`);
      return Buffer.from(value);
    });
  }

  private async reveal<T>(ref: string, target: BindingTarget, use: (metadata: CredentialMetadata, value: Buffer) => T, checked?: HttpBindingChecked): Promise<T> {
    return this.serially(async () => {
      const { row, entry, dataKey } = await this.locate(ref, target, checked);
      const value = vaultCrypto.open(dataKey, row.sealed, metadataAad(row.metadata));
      if (value === undefined) {
        throw new CredentialUnavailableError(ref, `its entry in ${vaultFilePath(this.dataDir)} does not authenticate (it was changed, or belongs to another vault)`);
      }
      try {
        if (!sameMetadata(row.metadata, entry)) throw new CredentialUnavailableError(ref, 'its entry in the vault file does not match the journal');
        return use(row.metadata, value);
      } finally {
        value.fill(0);
      }
    });
  }

  /**
   * The credential's entry and vault-file row, once the journal is caught up and the vault unlocked, if it may go
   * to `target`. Runs inside `serially`.
   */
  private async locate(ref: string, target: BindingTarget, checked?: HttpBindingChecked) {
    // A lock or a new version appended a moment ago by the CLI counts before anything is decrypted.
    await this.readNew(true);
    if (!this.current.initialized) throw new CredentialUnavailableError(ref, noVault(ref));
    if (this.current.locked || this.dataKey === undefined) throw new VaultLockedError(this.current.reason);
    let entry = this.history.credentials.get(ref);
    let row = entry === undefined ? undefined : this.vaultFile()?.credential(ref, entry.version);
    if (row === undefined) {
      // `vault set` appends the new version, then deletes the old row: a version read a moment ago may be gone, and the
      // new one appended before its notification reached this process. The store is read whatever was heard.
      await this.readNew(true, true);
      if (this.current.locked || this.dataKey === undefined) throw new VaultLockedError(this.current.reason);
      entry = this.history.credentials.get(ref);
      row = entry === undefined ? undefined : this.vaultFile()?.credential(ref, entry.version);
    }
    if (entry === undefined) throw new CredentialUnavailableError(ref, 'there is no such credential in the vault');
    const unchanged =
      checked !== undefined &&
      target.channel === 'http' &&
      checked.ref === ref &&
      checked.url === target.url &&
      checked.version === entry.version &&
      checked.vaultPosition === this.applied;
    const check = unchanged ? ({ ok: true } as const) : this.checkBinding(ref, target);
    if (!check.ok) {
      if (channelOf(entry.kind) !== target.channel) throw new CredentialUnavailableError(ref, `it is a ${entry.kind} credential, not for ${target.channel}`);
      throw new CredentialBindingError(ref, describeTarget(target), entry.bindings);
    }
    if (row === undefined) throw new CredentialUnavailableError(ref, `version ${entry.version} is missing from ${vaultFilePath(this.dataDir)}`);
    return { entry, row, dataKey: this.dataKey };
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.serialWork += 1;
    this.queue = run.then(this.serialDone, this.serialDone);
    return run;
  }

  private readonly serialDone = (): void => {
    this.serialWork -= 1;
  };

  /** What the store tells of vault events committed since the last read; `undefined` when asking failed. */
  private askNotified(): NotifiedAnswer | undefined {
    try {
      return { told: this.notifiedSinceLastRead() };
    } catch {
      // Asked again on the way that reads, which reports what fails.
      return undefined;
    }
  }

  private notifiedSinceLastRead(): NotifiedAnswer['told'] {
    return this.store.notifiedSince?.(Math.max(this.applied, this.checkedThrough), VAULT_EVENT_TYPES);
  }

  /**
   * Reads vault events committed since the last read; with `live`, each transition is announced. Asked before every
   * authorization and every credential use, and the vault's stream moves only when an operator acts. Where the store
   * can tell which event types were committed since a position (`notifiedSince`: PostgreSQL from its notifications,
   * SQLite from the types of what is committed in its file), it says whether a vault event was committed since
   * the last read — counting every append answered before the newest commit this process knows of (the call's own
   * event, or its own `Dispatched`), in any process — and the store is read only then. Elsewhere, or when it cannot
   * tell, one indexed look-up of the stream's revision says whether there is anything to read. `force` reads
   * whatever was heard. `asked`: the store's answer, asked already while none of this service's work was under way.
   */
  private async readNew(live: boolean, force = false, asked?: NotifiedAnswer): Promise<void> {
    const stream = vaultStream();
    const told = force ? undefined : await (asked === undefined ? this.notifiedSinceLastRead() : asked.told);
    if (told?.changed === false) return;
    // Every position seen is committed: the revision read next counts every vault event up to there.
    const through = told?.through ?? this.store.seenPosition?.();
    const revision = await this.store.streamRevision(stream);
    if (revision !== undefined && revision > this.revision) {
      for (const event of await this.store.readStream(stream, { fromRevision: this.revision + 1 })) {
        if (live) await this.follow(event);
        else this.apply(event);
      }
    }
    if (through !== undefined) this.checkedThrough = Math.max(this.checkedThrough, through);
  }

  private async follow(event: RecordedEvent): Promise<void> {
    if (this.apply(event)) await this.reconcile(true);
  }

  /** Folds one event; false when it was applied already. A lock drops the data key at once. */
  private apply(event: RecordedEvent): boolean {
    if (event.position <= this.applied) return false;
    this.applied = event.position;
    this.position = Math.max(this.position, event.position);
    this.revision = Math.max(this.revision, event.revision);
    this.history = evolveVault(this.history, event);
    if (event.type === 'VaultLocked' || event.type === 'VaultUnlocked') {
      this.dropKey();
      // A new unlock is a new attempt with whatever master key this process has now.
      this.keyProblem = undefined;
    }
    return true;
  }

  /** Brings the data key in line with the journal, then the state; announces a lock/unlock transition. */
  private async reconcile(announce: boolean): Promise<void> {
    const { initialized, lock } = this.history;
    if (initialized !== null && lock !== null && !lock.locked && this.dataKey === undefined && this.keyProblem === undefined) {
      try {
        const file = this.vaultFile();
        if (file === undefined) throw new VaultKeyError(`the journal has a vault but ${vaultFilePath(this.dataDir)} is missing`);
        this.dataKey = await unwrapDataKey(file, masterKeyOf(this.dataDir, this.env));
      } catch (error) {
        if (!(error instanceof VaultKeyError)) throw error;
        this.keyProblem = error.reason;
        this.log.warn(`the vault stays locked in this process: ${error.reason}`);
      }
    }
    const previous = this.current;
    this.current = this.describeState();
    if (announce && (previous.locked !== this.current.locked || previous.initialized !== this.current.initialized)) {
      for (const listener of this.listeners) {
        try {
          listener(this.current);
        } catch (error) {
          this.log.error(`a vault listener failed: ${(error as Error).message}`);
        }
      }
    }
  }

  private describeState(): VaultState {
    const { initialized, lock } = this.history;
    if (initialized === null || lock === null) return ABSENT;
    if (lock.locked) return { initialized: true, locked: true, reason: `locked by ${lock.by}: ${lock.reason}`, since: lock.at };
    if (this.dataKey === undefined) return { initialized: true, locked: true, reason: this.keyProblem ?? 'the data key is not open', since: lock.at };
    return { initialized: true, locked: false, reason: `unlocked by ${lock.by}`, since: lock.at };
  }

  private vaultFile(): VaultFile | undefined {
    if (this.file === undefined && VaultFile.exists(this.dataDir)) this.file = VaultFile.open(this.dataDir);
    return this.file;
  }

  private dropKey(): void {
    this.dataKey?.fill(0);
    this.dataKey = undefined;
  }
}

function sameMetadata(row: CredentialMetadata, entry: StoredCredential): boolean {
  return (
    row.ref === entry.ref &&
    row.kind === entry.kind &&
    row.header === entry.header &&
    row.scheme === entry.scheme &&
    row.approval === entry.approval &&
    row.version === entry.version &&
    row.bindings.length === entry.bindings.length &&
    row.bindings.every((binding, index) => binding === entry.bindings[index])
  );
}
