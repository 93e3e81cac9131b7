import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { approverStream, STREAM_CATEGORIES } from '@oncegate/domain';
import { newEventId, type EventStore, type RecordedEvent } from '@oncegate/event-store';
import { PrincipalDirectory, type PrincipalKind } from './principal-directory';

/**
 * Approvers are people who decide approvals over the HTTP API. Their `oga_` tokens live on `approver-<name>`
 * streams and authenticate as `approver:<name>`; they are never agent tokens, so they never call tools, and an
 * agent token never decides an approval.
 */
export const APPROVER_PRINCIPALS: PrincipalKind = {
  label: 'approver',
  stream: approverStream,
  streamPrefix: `${STREAM_CATEGORIES.approver}-`,
  tokenPrefix: 'oga_',
  events: { issued: 'ApproverTokenIssued', revoked: 'ApproverTokenRevoked' },
};

/** Event types of an approver's signing keys, on the same `approver-<name>` stream as their tokens. */
export const APPROVER_KEY_EVENTS = { added: 'ApproverKeyAdded', revoked: 'ApproverKeyRevoked' } as const;

/**
 * Data of an `ApproverKeyAdded` event: an approver's Ed25519 public key, which checks the signature of decisions
 * taken from the bus in their name. Only the public half is ever recorded.
 */
export interface ApproverKeyAddedData {
  /** The approver's name (the actor is `approver:<name>`). */
  readonly name: string;
  /** SHA-256 of the key's DER SubjectPublicKeyInfo, lower-case hex: the same key always has the same id. */
  readonly keyId: string;
  readonly algorithm: 'Ed25519';
  /** The public key, PEM (`-----BEGIN PUBLIC KEY-----`, SPKI). */
  readonly publicKeyPem: string;
  readonly addedAt: string;
}

/** Data of an `ApproverKeyRevoked` event: the key no longer verifies any decision, and is not taken again. */
export interface ApproverKeyRevokedData {
  readonly name: string;
  /** The key revoked (its `keyId` when added). */
  readonly keyId: string;
  readonly revokedAt: string;
}

export interface ApproverKeyRecord {
  readonly name: string;
  /** `approver:<name>`. */
  readonly actor: string;
  readonly keyId: string;
  readonly publicKeyPem: string;
  readonly addedAt: string;
  readonly revokedAt: string | null;
}

/** A public key refused (not Ed25519, not a public key, a private key, already another approver's or revoked). */
export class ApproverKeyError extends Error {
  readonly kind = 'approver_key_invalid' as const;
  constructor(message: string) {
    super(message);
    this.name = 'ApproverKeyError';
  }
}

/** Shortest key id prefix a revocation may name: 8 hex digits, 32 bits, so two keys of one approver never share it by chance. */
const KEY_ID_PREFIX = /^[0-9a-f]{8,64}$/;
const PEM_LABEL = /-----BEGIN ([A-Z0-9 ]+)-----/g;
const HOW_TO_MAKE = 'openssl genpkey -algorithm ed25519 -out alice.pem && openssl pkey -in alice.pem -pubout -out alice.pub.pem';

/**
 * The Ed25519 public key in `text` (a PEM file's content), or an `ApproverKeyError` saying what the file holds
 * instead. A private key is refused even though its public half could be derived: the gateway must never be handed
 * a key that signs in an approver's name. `source` names the file in messages; the content is never repeated.
 */
export function approverPublicKey(text: string, source: string): KeyObject {
  const labels = [...text.matchAll(PEM_LABEL)].map((match) => match[1] ?? '');
  if (labels.some((label) => label.includes('PRIVATE KEY'))) {
    throw new ApproverKeyError(`${source} holds a private key: give the public half instead (openssl pkey -in ${source} -pubout -out public.pem); the private key stays with its approver`);
  }
  if (/^\s*ssh-ed25519 /.test(text)) {
    throw new ApproverKeyError(`${source} is an OpenSSH public key: give a PEM public key (-----BEGIN PUBLIC KEY-----), made with: ${HOW_TO_MAKE}`);
  }
  if (labels.includes('CERTIFICATE')) {
    throw new ApproverKeyError(`${source} is a certificate: give its public key (openssl x509 -in ${source} -pubkey -noout > public.pem)`);
  }
  const blocks = [...text.matchAll(/-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g)].map((match) => match[0]);
  if (blocks.length !== 1) {
    throw new ApproverKeyError(
      blocks.length === 0
        ? `${source} is not a PEM public key (-----BEGIN PUBLIC KEY-----, SPKI); make an Ed25519 key pair with: ${HOW_TO_MAKE}`
        : `${source} holds ${blocks.length} public keys: give one key per file`,
    );
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: blocks[0]!, format: 'pem' });
  } catch (error) {
    throw new ApproverKeyError(`${source} is not a readable public key: ${(error as Error).message}`);
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new ApproverKeyError(`${source} holds a key of type ${key.asymmetricKeyType ?? 'unknown'}; decisions are signed with Ed25519 keys only (${HOW_TO_MAKE})`);
  }
  return key;
}

/** The id of a public key: SHA-256 of its DER SubjectPublicKeyInfo, lower-case hex. */
export function approverKeyId(key: KeyObject): string {
  return createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('hex');
}

/**
 * The approvers of this journal: their API tokens (the principal directory) and the Ed25519 public keys that
 * sign their decisions taken from the bus (docs/bus.md, "Who may decide"). Keys are events on the approver's
 * stream beside their tokens, so the CLI can add or revoke one while the relay runs and the relay sees it.
 */
export class ApproverDirectory extends PrincipalDirectory {
  /** Every key ever added, by `<name>/<keyId>`, with the key object of each live one. */
  private readonly keyRecords = new Map<string, { record: ApproverKeyRecord; key: KeyObject | undefined }>();

  constructor(store: EventStore) {
    super(store, APPROVER_PRINCIPALS);
  }

  /**
   * Registers `key` for `name`: `added` is false when it is already theirs. A key another approver holds is refused
   * (a signature names one author), as is a key revoked before (it was given up, maybe because it leaked).
   */
  async addKey(name: string, key: KeyObject, now: Date = new Date()): Promise<{ readonly record: ApproverKeyRecord; readonly added: boolean }> {
    this.requireName(name);
    if (key.type !== 'public' || key.asymmetricKeyType !== 'ed25519') throw new ApproverKeyError('only an Ed25519 public key is registered');
    await this.refresh();
    const keyId = approverKeyId(key);
    const same = [...this.keyRecords.values()].map((entry) => entry.record).filter((record) => record.keyId === keyId);
    const revoked = same.find((record) => record.revokedAt !== null);
    if (revoked !== undefined) {
      throw new ApproverKeyError(`key ${keyId.slice(0, 16)} of ${revoked.actor} was revoked at ${revoked.revokedAt}; a revoked key is not taken again: make a new key pair (${HOW_TO_MAKE})`);
    }
    const live = same.find((record) => record.revokedAt === null);
    if (live !== undefined && live.name === name) return { record: live, added: false };
    if (live !== undefined) throw new ApproverKeyError(`this key is already registered for ${live.actor}: each approver signs with a key of their own`);
    const data: ApproverKeyAddedData = {
      name,
      keyId,
      algorithm: 'Ed25519',
      publicKeyPem: key.export({ type: 'spki', format: 'pem' }).toString(),
      addedAt: now.toISOString(),
    };
    await this.appendKeyEvent(name, APPROVER_KEY_EVENTS.added, data, now);
    await this.refresh();
    return { record: this.keyRecords.get(`${name}/${keyId}`)!.record, added: true };
  }

  /**
   * Revokes the live keys of `name`, or only the one whose id starts with `keyIdPrefix` (at least 8 hex digits);
   * returns those revoked. A prefix that names two keys is refused.
   */
  async revokeKeys(name: string, keyIdPrefix?: string, now: Date = new Date()): Promise<ApproverKeyRecord[]> {
    this.requireName(name);
    const prefix = keyIdPrefix?.toLowerCase();
    if (prefix !== undefined && !KEY_ID_PREFIX.test(prefix)) {
      throw new ApproverKeyError(`'${keyIdPrefix}' is not a key id: give at least its first 8 hex digits, as oncegate approvers key list shows them`);
    }
    await this.refresh();
    const live = [...this.keyRecords.values()]
      .map((entry) => entry.record)
      .filter((record) => record.name === name && record.revokedAt === null && (prefix === undefined || record.keyId.startsWith(prefix)));
    if (prefix !== undefined && live.length > 1) {
      throw new ApproverKeyError(`${prefix} names ${live.length} keys of approver:${name}: give more of the key id`);
    }
    for (const record of live) {
      const data: ApproverKeyRevokedData = { name, keyId: record.keyId, revokedAt: now.toISOString() };
      await this.appendKeyEvent(name, APPROVER_KEY_EVENTS.revoked, data, now);
    }
    await this.refresh();
    return live.map((record) => this.keyRecords.get(`${name}/${record.keyId}`)!.record);
  }

  /** Every key ever added, revoked ones included, by approver and then by when it was added. */
  async keys(): Promise<ApproverKeyRecord[]> {
    await this.refresh();
    return [...this.keyRecords.values()].map((entry) => entry.record).sort((a, b) => a.name.localeCompare(b.name) || a.addedAt.localeCompare(b.addedAt));
  }

  /** The keys that may sign for `actor` (`approver:<name>`) now: those not revoked, read up to the journal's head. */
  async signingKeys(actor: string): Promise<{ readonly keyId: string; readonly key: KeyObject }[]> {
    await this.refresh();
    const keys: { keyId: string; key: KeyObject }[] = [];
    for (const { record, key } of this.keyRecords.values()) {
      if (record.actor === actor && record.revokedAt === null && key !== undefined) keys.push({ keyId: record.keyId, key });
    }
    return keys;
  }

  protected override applyOther(event: RecordedEvent): void {
    if (event.type === APPROVER_KEY_EVENTS.added) {
      const data = event.data as ApproverKeyAddedData;
      let key: KeyObject | undefined;
      try {
        key = createPublicKey(data.publicKeyPem);
      } catch {
        // Written by addKey from a key it had read, so unreadable only if the journal was edited: such a key verifies nothing.
        key = undefined;
      }
      const record: ApproverKeyRecord = {
        name: data.name,
        actor: `${this.kind.label}:${data.name}`,
        keyId: data.keyId,
        publicKeyPem: data.publicKeyPem,
        addedAt: data.addedAt,
        revokedAt: null,
      };
      this.keyRecords.set(`${data.name}/${data.keyId}`, { record, key });
    } else if (event.type === APPROVER_KEY_EVENTS.revoked) {
      const data = event.data as ApproverKeyRevokedData;
      const previous = this.keyRecords.get(`${data.name}/${data.keyId}`);
      if (previous === undefined || previous.record.revokedAt !== null) return;
      this.keyRecords.set(`${data.name}/${data.keyId}`, { record: { ...previous.record, revokedAt: data.revokedAt ?? event.recordedAt }, key: undefined });
    }
  }

  private async appendKeyEvent(name: string, type: string, data: ApproverKeyAddedData | ApproverKeyRevokedData, now: Date): Promise<void> {
    const eventId = newEventId();
    await this.store.appendToStream(approverStream(name), [
      { id: eventId, type, data, metadata: { eventId, actor: 'operator:cli', recordedAt: now.toISOString(), schemaVersion: 1 } },
    ]);
  }
}
