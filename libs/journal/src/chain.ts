import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** `prev` of the first event of every stream. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an event's hash covers: everything about it except its global position and its own link. */
export interface ChainedEventFields {
  readonly streamId: string;
  readonly revision: number;
  readonly id: string;
  readonly type: string;
  readonly data: unknown;
  /** The metadata as appended (never containing `prev` or `hash`). */
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly recordedAt: string;
}

/**
 * The hash-chain link of one event (DESIGN section 8): SHA-256 over the previous event's hash in the same
 * stream, a newline, and the RFC 8785 canonical JSON of the event. Editing any field, or linking an event to
 * another predecessor, changes it. Global order is protected by the seals, not by this link.
 */
export function eventHash(prev: string, event: ChainedEventFields): string {
  // The fields come from JSON (the store or an export line), so they are plain JSON already.
  const canonical = canonicalize({
    streamId: event.streamId,
    revision: event.revision,
    id: event.id,
    type: event.type,
    data: event.data,
    metadata: event.metadata,
    recordedAt: event.recordedAt,
  });
  if (canonical === undefined) throw new TypeError(`event ${event.id} of ${event.streamId} is not JSON`);
  return createHash('sha256').update(prev).update('\n').update(canonical).digest('hex');
}
