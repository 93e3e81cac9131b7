import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { agentStream } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';

/**
 * API tokens of agents (DESIGN section 3). A token is shown once when issued; the store keeps only its
 * SHA-256 (tokens carry 256 random bits, so a plain hash is not guessable). Tokens are events on
 * `agent-<name>` streams, so the CLI can issue one while the gateway runs and the gateway sees it.
 */
export interface AgentRecord {
  readonly name: string;
  readonly actor: string;
  readonly tokenId: string;
  readonly issuedAt: string;
  readonly revokedAt: string | null;
}

export class AgentNameError extends Error {
  readonly kind = 'agent_name_invalid' as const;
  constructor(readonly agentName: string) {
    super(`'${agentName}' is not a valid agent name: use 1-64 of a-z, 0-9, '_', '.', '-', starting with a letter or digit`);
    this.name = 'AgentNameError';
  }
}

const NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
const TOKEN = /^ogt_[A-Za-z0-9_-]{43}$/;

function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export class AgentDirectory {
  private readonly byHash = new Map<string, { record: AgentRecord; hash: Buffer }>();
  private readonly records = new Map<string, AgentRecord>();
  /** How far the directory has read the journal; `applied` guards against applying an event twice. */
  private position = 0;
  private applied = 0;

  constructor(private readonly store: EventStore) {}

  /** Issues a new token for `name`; the returned token is the only copy. */
  async issue(name: string, now: Date = new Date()): Promise<{ token: string; record: AgentRecord }> {
    if (!NAME.test(name)) throw new AgentNameError(name);
    const token = `ogt_${randomBytes(32).toString('base64url')}`;
    const tokenId = uuidv7();
    const eventId = uuidv7();
    await this.store.appendToStream(agentStream(name), [
      {
        id: eventId,
        type: 'AgentTokenIssued',
        data: { name, tokenId, tokenSha256: hashToken(token).toString('hex'), issuedAt: now.toISOString() },
        metadata: { eventId, actor: 'operator:cli', recordedAt: now.toISOString(), schemaVersion: 1 },
      },
    ]);
    await this.refresh();
    return { token, record: this.records.get(tokenId)! };
  }

  /** Revokes every token of `name`; returns how many were active. */
  async revoke(name: string, now: Date = new Date()): Promise<number> {
    if (!NAME.test(name)) throw new AgentNameError(name);
    await this.refresh();
    const active = [...this.records.values()].filter((r) => r.name === name && r.revokedAt === null);
    for (const record of active) {
      const eventId = uuidv7();
      await this.store.appendToStream(agentStream(name), [
        {
          id: eventId,
          type: 'AgentTokenRevoked',
          data: { name, tokenId: record.tokenId, revokedAt: now.toISOString() },
          metadata: { eventId, actor: 'operator:cli', recordedAt: now.toISOString(), schemaVersion: 1 },
        },
      ]);
    }
    await this.refresh();
    return active.length;
  }

  async list(): Promise<AgentRecord[]> {
    await this.refresh();
    return [...this.records.values()].sort((a, b) => a.name.localeCompare(b.name) || a.issuedAt.localeCompare(b.issuedAt));
  }

  /** The actor a bearer token belongs to, or `undefined` (unknown, malformed or revoked). */
  async authenticate(token: string | undefined): Promise<string | undefined> {
    if (token === undefined || !TOKEN.test(token)) return undefined;
    const hash = hashToken(token);
    let found = this.byHash.get(hash.toString('hex'));
    if (found === undefined) {
      // Issued by another process (the CLI) since the last look: read what is new, then look again.
      await this.refresh();
      found = this.byHash.get(hash.toString('hex'));
    }
    if (found === undefined || !timingSafeEqual(found.hash, hash) || found.record.revokedAt !== null) return undefined;
    return found.record.actor;
  }

  /**
   * Follows agent events as they are committed (by this process or the CLI), so a revocation takes effect
   * within the store's polling interval.
   */
  watch(): { stop(): Promise<void> } {
    const subscription = this.store.subscribeToAll((event) => this.apply(event), {
      from: { after: this.position },
      filter: { streamPrefixes: ['agent-'] },
    });
    return { stop: () => subscription.stop() };
  }

  /** Reads agent events committed since the last refresh. */
  async refresh(): Promise<void> {
    for (;;) {
      const page = await this.store.readAll({ after: this.position, maxCount: 1000, filter: { streamPrefixes: ['agent-'] } });
      for (const event of page.events) this.apply(event);
      if (page.lastPosition <= this.position) return;
      this.position = Math.max(this.position, page.lastPosition);
    }
  }

  private apply(event: RecordedEvent): void {
    if (event.position <= this.applied) return;
    this.applied = event.position;
    this.position = Math.max(this.position, event.position);
    const data = event.data as { name: string; tokenId: string; tokenSha256?: string; issuedAt?: string; revokedAt?: string };
    if (event.type === 'AgentTokenIssued' && data.tokenSha256 && data.issuedAt) {
      const record: AgentRecord = {
        name: data.name,
        actor: `agent:${data.name}`,
        tokenId: data.tokenId,
        issuedAt: data.issuedAt,
        revokedAt: null,
      };
      this.records.set(record.tokenId, record);
      this.byHash.set(data.tokenSha256, { record, hash: Buffer.from(data.tokenSha256, 'hex') });
    } else if (event.type === 'AgentTokenRevoked') {
      const previous = this.records.get(data.tokenId);
      if (previous === undefined) return;
      const revoked = { ...previous, revokedAt: data.revokedAt ?? event.recordedAt };
      this.records.set(previous.tokenId, revoked);
      for (const [key, entry] of this.byHash) {
        if (entry.record.tokenId === previous.tokenId) this.byHash.set(key, { ...entry, record: revoked });
      }
    }
  }
}
