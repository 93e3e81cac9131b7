import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { newEventId, readAllFrom, type EventStore, type RecordedEvent } from '@oncegate/event-store';

/**
 * API tokens of one kind of principal (agents calling tools, approvers deciding approvals; docs/design.md section 3).
 * A token is shown once when issued; the store keeps only its SHA-256 (tokens carry 256 random bits, so a plain
 * hash is not guessable). Tokens are events on one stream per principal, so the CLI can issue or revoke one
 * while the gateway runs and the gateway sees it. Each kind reads only its own streams and has its own token
 * prefix: a token of one kind is never accepted as another.
 */
export interface PrincipalKind {
  /** `agent`, `approver`: the actor is `<label>:<name>`, and messages name the kind. */
  readonly label: string;
  /** The stream of one principal, from `@oncegate/domain` (`agentStream`, `approverStream`). */
  readonly stream: (name: string) => string;
  /** What every stream of this kind starts with (`agent-`), to follow them all. */
  readonly streamPrefix: string;
  /** Prefix of the tokens issued (`ogt_`), so a token of another kind is refused before any look-up. */
  readonly tokenPrefix: string;
  /** Event types written on the principal's stream. */
  readonly events: { readonly issued: string; readonly revoked: string };
}

export interface PrincipalRecord {
  readonly name: string;
  /** `<label>:<name>`. */
  readonly actor: string;
  readonly tokenId: string;
  readonly issuedAt: string;
  readonly revokedAt: string | null;
}

export class PrincipalNameError extends Error {
  readonly kind = 'principal_name_invalid' as const;
  constructor(
    readonly label: string,
    readonly principalName: string,
  ) {
    super(`'${principalName}' is not a valid ${label} name: use 1-64 of a-z, 0-9, '_', '.', '-', starting with a letter or digit`);
    this.name = 'PrincipalNameError';
  }
}

/** A token given to register (`--token-from-env`) that does not have its kind's shape; the value is never repeated. */
export class PrincipalTokenError extends Error {
  readonly kind = 'principal_token_invalid' as const;
  constructor(label: string, prefix: string) {
    super(`not a valid ${label} token: it must be ${prefix} followed by 43 characters of A-Z a-z 0-9 _ - (32 random bytes, base64url)`);
    this.name = 'PrincipalTokenError';
  }
}

const NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
const TOKEN_BODY = /^[A-Za-z0-9_-]{43}$/;
/** Any kind's token: `og<letter>_` and 43 characters (agents `ogt_`, approvers `oga_`). */
const ANY_KIND = /^og[a-z]_[A-Za-z0-9_-]{43}$/;

/**
 * Why a token was refused: none given, not a token of ours, a token of another kind (an approver's on the MCP
 * endpoint), no such token, or a revoked one. A bounded set: it labels a metric.
 */
export type TokenRefusal = 'missing' | 'malformed' | 'wrong_kind' | 'unknown' | 'revoked';

/** What a token is: its actor, or why it is refused (with the principal a revoked token was issued to). */
export type TokenVerdict = { readonly actor: string } | { readonly refused: TokenRefusal; readonly principal?: string };

function hashToken(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}

/** Data of a token-issued event (`AgentTokenIssued`, `ApproverTokenIssued`): the token itself is never stored. */
export interface PrincipalTokenIssuedData {
  /** The principal's name (the actor is `<kind>:<name>`). */
  readonly name: string;
  /** Id of the token, a UUIDv7; revocations name it. */
  readonly tokenId: string;
  /** SHA-256 of the token, lower-case hex. */
  readonly tokenSha256: string;
  readonly issuedAt: string;
}

/** Data of a token-revoked event (`AgentTokenRevoked`, `ApproverTokenRevoked`). */
export interface PrincipalTokenRevokedData {
  readonly name: string;
  /** The token revoked (its `tokenId` when issued). */
  readonly tokenId: string;
  readonly revokedAt: string;
}

/** Either event's data as read back: only the fields both carry are certain. */
interface TokenEventData {
  readonly name: string;
  readonly tokenId: string;
  readonly tokenSha256?: string;
  readonly issuedAt?: string;
  readonly revokedAt?: string;
}

export class PrincipalDirectory {
  private readonly byHash = new Map<string, { record: PrincipalRecord; hash: Buffer }>();
  private readonly records = new Map<string, PrincipalRecord>();
  /** How far the directory has read the journal; `applied` guards against applying an event twice. */
  private position = 0;
  private applied = 0;

  constructor(
    protected readonly store: EventStore,
    readonly kind: PrincipalKind,
  ) {}

  /**
   * Issues a new token for `name`; the returned token is the only copy. With `given` (a token made elsewhere, e.g. a
   * deployment's Secret), that token is registered instead: it must have this kind's shape.
   */
  async issue(name: string, now: Date = new Date(), given?: string): Promise<{ token: string; record: PrincipalRecord }> {
    this.requireName(name);
    if (given !== undefined && !this.wellFormed(given)) {
      throw new PrincipalTokenError(this.kind.label, this.kind.tokenPrefix);
    }
    const token = given ?? `${this.kind.tokenPrefix}${randomBytes(32).toString('base64url')}`;
    const tokenId = newEventId();
    await this.append(name, this.kind.events.issued, { name, tokenId, tokenSha256: hashToken(token).toString('hex'), issuedAt: now.toISOString() }, now);
    await this.refresh();
    return { token, record: this.records.get(tokenId)! };
  }

  /** Revokes every token of `name`; returns how many were active. */
  async revoke(name: string, now: Date = new Date()): Promise<number> {
    this.requireName(name);
    await this.refresh();
    const active = [...this.records.values()].filter((r) => r.name === name && r.revokedAt === null);
    for (const record of active) {
      await this.append(name, this.kind.events.revoked, { name, tokenId: record.tokenId, revokedAt: now.toISOString() }, now);
    }
    await this.refresh();
    return active.length;
  }

  async list(): Promise<PrincipalRecord[]> {
    await this.refresh();
    return [...this.records.values()].sort((a, b) => a.name.localeCompare(b.name) || a.issuedAt.localeCompare(b.issuedAt));
  }

  /** The active record of `token` when it is registered for `name`, else `undefined` (a bootstrap run again finds it). */
  async registered(name: string, token: string): Promise<PrincipalRecord | undefined> {
    await this.refresh();
    const found = this.byHash.get(hashToken(token).toString('hex'));
    return found !== undefined && found.record.name === name && found.record.revokedAt === null ? found.record : undefined;
  }

  /** The actor a bearer token belongs to, or `undefined` (unknown, malformed, of another kind, or revoked). */
  async authenticate(token: string | undefined): Promise<string | undefined> {
    const verdict = await this.verify(token);
    return 'actor' in verdict ? verdict.actor : undefined;
  }

  /** The actor a bearer token belongs to, or why it is refused. */
  async verify(token: string | undefined): Promise<TokenVerdict> {
    if (token === undefined) return { refused: 'missing' };
    if (!this.wellFormed(token)) return { refused: ANY_KIND.test(token) ? 'wrong_kind' : 'malformed' };
    const hash = hashToken(token);
    let found = this.byHash.get(hash.toString('hex'));
    if (found === undefined) {
      // Issued by another process (the CLI) since the last look: read what is new, then look again.
      await this.refresh();
      found = this.byHash.get(hash.toString('hex'));
    }
    if (found === undefined || !timingSafeEqual(found.hash, hash)) return { refused: 'unknown' };
    if (found.record.revokedAt !== null) return { refused: 'revoked', principal: found.record.name };
    return { actor: found.record.actor };
  }

  /** Whether `token` has this kind's shape (say, to tell a caller it brought a token of another kind). */
  wellFormed(token: string | undefined): token is string {
    return token !== undefined && token.startsWith(this.kind.tokenPrefix) && TOKEN_BODY.test(token.slice(this.kind.tokenPrefix.length));
  }

  /**
   * Follows this kind's events as they are committed (by this process or the CLI), so a revocation takes
   * effect within the store's polling interval.
   */
  watch(): { stop(): Promise<void> } {
    const subscription = this.store.subscribeToAll((event) => this.apply(event), {
      from: { after: this.position },
      filter: { streamPrefixes: [this.kind.streamPrefix] },
    });
    return { stop: () => subscription.stop() };
  }

  /** Reads this kind's events committed since the last refresh. */
  async refresh(): Promise<void> {
    const events = readAllFrom(this.store, { after: this.position, filter: { streamPrefixes: [this.kind.streamPrefix] } });
    for await (const event of events) this.apply(event);
    this.position = Math.max(this.position, events.position);
  }

  protected requireName(name: string): void {
    if (!NAME.test(name)) throw new PrincipalNameError(this.kind.label, name);
  }

  private async append(name: string, type: string, data: PrincipalTokenIssuedData | PrincipalTokenRevokedData, now: Date): Promise<void> {
    const eventId = newEventId();
    await this.store.appendToStream(this.kind.stream(name), [
      { id: eventId, type, data, metadata: { eventId, actor: 'operator:cli', recordedAt: now.toISOString(), schemaVersion: 1 } },
    ]);
  }

  private apply(event: RecordedEvent): void {
    if (event.position <= this.applied) return;
    this.applied = event.position;
    this.position = Math.max(this.position, event.position);
    const data = event.data as TokenEventData;
    if (event.type === this.kind.events.issued && data.tokenSha256 && data.issuedAt) {
      const record: PrincipalRecord = {
        name: data.name,
        actor: `${this.kind.label}:${data.name}`,
        tokenId: data.tokenId,
        issuedAt: data.issuedAt,
        revokedAt: null,
      };
      this.records.set(record.tokenId, record);
      this.byHash.set(data.tokenSha256, { record, hash: Buffer.from(data.tokenSha256, 'hex') });
    } else if (event.type === this.kind.events.revoked) {
      const previous = this.records.get(data.tokenId);
      if (previous === undefined) return;
      const revoked = { ...previous, revokedAt: data.revokedAt ?? event.recordedAt };
      this.records.set(previous.tokenId, revoked);
      for (const [key, entry] of this.byHash) {
        if (entry.record.tokenId === previous.tokenId) this.byHash.set(key, { ...entry, record: revoked });
      }
    } else {
      this.applyOther(event);
    }
  }

  /**
   * Another event of this kind's streams (an approver's signing keys sit beside their tokens): a subclass that
   * records more of a principal reads it here, in commit order and once, as `refresh` and `watch` meet it.
   */
  protected applyOther(_event: RecordedEvent): void {}
}
