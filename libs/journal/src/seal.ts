import { createHash, sign, verify, type Hash, type KeyObject } from 'node:crypto';
import { canonicalJsonUnchecked } from '@oncegate/fingerprint';
import { GENESIS_HASH } from '@oncegate/event-store/chain';

/** The stream the sealer appends to. Seal events are ordinary events: later seals cover them. */
export const SEAL_STREAM = 'journal-seals';
export const SEAL_EVENT_TYPE = 'JournalSealed';

/** What a seal states, and what its signature covers (as RFC 8785 canonical JSON). */
export interface SealBody {
  /** 0 for the first seal of a journal, then 1, 2… */
  readonly sealIndex: number;
  /** Global position the seal starts after (exclusive): the previous seal's `toPosition`, 0 for seal 0. */
  readonly fromPosition: number;
  /** Last global position the seal covers (inclusive). Always before the seal event's own position. */
  readonly toPosition: number;
  /** Number of events in (fromPosition, toPosition]. */
  readonly eventCount: number;
  /** `digest` of the previous seal; `GENESIS_HASH` for seal 0. */
  readonly previousDigest: string;
  /** SHA-256 (hex) over `previousDigest` followed by the `hash` of every covered event in position order. */
  readonly digest: string;
  /** `publicKeyId` of the key that signed the seal. */
  readonly keyId: string;
}

/** Data of a `JournalSealed` event. */
export interface JournalSealedData extends SealBody {
  /** Base64 Ed25519 signature over the RFC 8785 canonical JSON of `SealBody`. */
  readonly signature: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** A seal cannot be planned from the events given. Carries the positions involved. */
export class SealPlanError extends Error {
  readonly kind = 'seal_plan' as const;
  constructor(
    readonly expectedPosition: number,
    readonly actualPosition: number,
  ) {
    super(`cannot plan seal: expected event at position ${expectedPosition}, got ${actualPosition}`);
    this.name = 'SealPlanError';
  }
}

/** Streaming seal digest: `new SealDigest(previousDigest)`, `add(hash)` per event in position order, `digest()`. */
export class SealDigest {
  private readonly hash: Hash;
  private added = 0;

  constructor(previousDigest: string) {
    if (!HEX64.test(previousDigest)) throw new TypeError('previousDigest must be 64 lowercase hex characters');
    this.hash = createHash('sha256').update(previousDigest);
  }

  /** Event hashes are fixed-length hex, so plain concatenation is unambiguous. */
  add(eventHash: string): this {
    if (eventHash.length !== 64) throw new TypeError('event hash must be 64 hex characters');
    this.hash.update(eventHash);
    this.added += 1;
    return this;
  }

  get count(): number {
    return this.added;
  }

  /** Finishes the digest; the instance cannot be used afterwards. */
  digest(): string {
    return this.hash.digest('hex');
  }
}

/** Short stable id of a public key: the first 16 hex characters of SHA-256 over its SPKI DER encoding. */
export function publicKeyId(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('hex').slice(0, 16);
}

/** Exactly the signed fields, whatever else the object carries. */
export function sealBodyOf(data: SealBody): SealBody {
  return {
    sealIndex: data.sealIndex,
    fromPosition: data.fromPosition,
    toPosition: data.toPosition,
    eventCount: data.eventCount,
    previousDigest: data.previousDigest,
    digest: data.digest,
    keyId: data.keyId,
  };
}

function signedBytes(body: SealBody): Buffer {
  return Buffer.from(canonicalJsonUnchecked(sealBodyOf(body))!, 'utf8');
}

export function signSeal(body: SealBody, privateKey: KeyObject): JournalSealedData {
  const signature = sign(null, signedBytes(body), privateKey).toString('base64');
  return { ...sealBodyOf(body), signature };
}

/** True when `data` has the shape of a seal and its signature verifies with `publicKey`. Never throws. */
export function verifySealSignature(data: JournalSealedData, publicKey: KeyObject): boolean {
  if (!isJournalSealedData(data)) return false;
  try {
    return verify(null, signedBytes(data), publicKey, Buffer.from(data.signature, 'base64'));
  } catch {
    return false;
  }
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** Shape check of a `JournalSealed` event's data (a verifier receives it from an untrusted file). */
export function isJournalSealedData(value: unknown): value is JournalSealedData {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    isCount(v['sealIndex']) &&
    isCount(v['fromPosition']) &&
    isCount(v['toPosition']) &&
    isCount(v['eventCount']) &&
    typeof v['previousDigest'] === 'string' &&
    HEX64.test(v['previousDigest']) &&
    typeof v['digest'] === 'string' &&
    HEX64.test(v['digest']) &&
    typeof v['keyId'] === 'string' &&
    typeof v['signature'] === 'string'
  );
}

export interface PlanSealInput {
  /** The last seal appended to `SEAL_STREAM`, absent for the first seal. */
  readonly previous?: SealBody;
  /**
   * Events after `previous.toPosition` up to the head, in position order. Events at or before
   * `previous.toPosition` are skipped, so a reader may pass a page that overlaps the previous seal.
   */
  readonly events: ReadonlyArray<{ readonly position: number; readonly hash: string }>;
  /** `publicKeyId` of the signing key. */
  readonly keyId: string;
}

/**
 * The next seal's body, or `undefined` when nothing was appended since the previous seal. Throws
 * `SealPlanError` when the positions given are not contiguous: a seal must cover every position.
 */
export function planSeal(input: PlanSealInput): SealBody | undefined {
  const fromPosition = input.previous?.toPosition ?? 0;
  const previousDigest = input.previous?.digest ?? GENESIS_HASH;
  const digest = new SealDigest(previousDigest);
  let toPosition = fromPosition;
  for (const event of input.events) {
    if (event.position <= fromPosition) continue;
    if (event.position !== toPosition + 1) throw new SealPlanError(toPosition + 1, event.position);
    digest.add(event.hash);
    toPosition = event.position;
  }
  if (toPosition === fromPosition) return undefined;
  return {
    sealIndex: input.previous === undefined ? 0 : input.previous.sealIndex + 1,
    fromPosition,
    toPosition,
    eventCount: toPosition - fromPosition,
    previousDigest,
    digest: digest.digest(),
    keyId: input.keyId,
  };
}
