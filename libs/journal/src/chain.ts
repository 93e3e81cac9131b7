import { createHash } from 'node:crypto';
import { canonicalEventJson } from '@oncegate/fingerprint';

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
 * The hash-chain link of one event (docs/design.md section 8): SHA-256 over the previous event's hash in the same
 * stream, a newline, and the RFC 8785 canonical JSON of the event. Editing any field, or linking an event to
 * another predecessor, changes it. Global order is protected by the seals, not by this link.
 */
export function eventHash(prev: string, event: ChainedEventFields): string {
  // The fields come from JSON (the store or an export line), so they are plain JSON already.
  // `canonicalEventJson` is byte-identical to the `canonicalize` package (fingerprint's canonical-json-writer.unit.spec.ts).
  const canonical = canonicalEventJson(
    event.streamId,
    event.revision,
    event.id,
    event.type,
    event.data,
    event.metadata,
    event.recordedAt,
  );
  if (canonical === undefined) throw new TypeError(`event ${event.id} of ${event.streamId} is not JSON`);
  // One update of the whole preimage: the same bytes as updating prev, '\n' and the JSON in turn.
  return createHash('sha256').update(prev + '\n' + canonical).digest('hex');
}
