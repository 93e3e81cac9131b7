import { hash as digest } from 'node:crypto';
import { canonicalEventJson } from '@oncegate/fingerprint';

/**
 * The journal's hash chain (docs/design.md section 8), in one place for every adapter and for verification: each
 * event's `hash` is SHA-256 over the previous event of its stream's `hash` (`GENESIS_HASH` for revision 0), a
 * newline, and the RFC 8785 canonical JSON of `{streamId, revision, id, type, data, metadata, recordedAt}`.
 */

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
 * The hash-chain link of one event as a reader gets it back (its data and metadata parsed from JSON): editing any
 * field, or linking the event to another predecessor, changes it. Global order is protected by the seals.
 */
export function eventHash(prev: string, event: ChainedEventFields): string {
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
  return linkHash(prev, canonical);
}

/** SHA-256 (hex) of `prev`, a newline and an event's canonical JSON, hashed in one call (no Hash object). */
function linkHash(prev: string, canonicalEvent: string): string {
  return digest('sha256', prev + '\n' + canonicalEvent, 'hex');
}

/**
 * The canonical JSON of an event from its parts, with data and metadata given as their canonical JSON texts
 * (built once when the append was checked, see `SerialisedEvent`): the seven keys in RFC 8785 order and the
 * strings escaped as `JSON.stringify` does, so the text is `canonicalEventJson` of the event as a reader parses
 * it back, without parsing anything.
 */
export function canonicalEventText(
  streamId: string,
  revision: number,
  id: string,
  type: string,
  canonicalData: string,
  canonicalMetadata: string,
  recordedAt: string,
): string {
  return (
    '{"data":' +
    canonicalData +
    ',"id":' +
    JSON.stringify(id) +
    ',"metadata":' +
    canonicalMetadata +
    ',"recordedAt":' +
    JSON.stringify(recordedAt) +
    ',"revision":' +
    String(revision) +
    ',"streamId":' +
    JSON.stringify(streamId) +
    ',"type":' +
    JSON.stringify(type) +
    '}'
  );
}

/** An event about to be linked: its id (assigned) and type, its data and metadata as canonical JSON texts. */
export interface ChainableEvent {
  readonly id: string;
  readonly type: string;
  readonly canonicalData: string;
  readonly canonicalMetadata: string;
}

/** The stream's last event before the append: its revision and hash. */
export interface ChainTip {
  readonly revision: number;
  readonly hash: string;
}

/** One event's place in its stream: revision, the previous event's hash and its own. */
export interface ChainLink {
  readonly revision: number;
  readonly prev: string;
  readonly hash: string;
}

/**
 * Links a stream's new events from its tip (`undefined` for a new stream), in order: what an adapter computes
 * inside its append transaction, where the tip is known.
 */
export function linkEvents(streamId: string, tip: ChainTip | undefined, events: readonly ChainableEvent[], recordedAt: string): ChainLink[] {
  let revision = tip?.revision ?? -1;
  let prev = tip?.hash ?? GENESIS_HASH;
  const links: ChainLink[] = new Array(events.length);
  for (let i = 0; i < events.length; i += 1) {
    const event = events[i]!;
    revision += 1;
    const hash = linkHash(prev, canonicalEventText(streamId, revision, event.id, event.type, event.canonicalData, event.canonicalMetadata, recordedAt));
    links[i] = { revision, prev, hash };
    prev = hash;
  }
  return links;
}
