import { isUtf8 } from 'node:buffer';
import { hash as sha256 } from 'node:crypto';
import { canonicalEventJson } from '@oncegate/fingerprint';
import { JournalFormatError, parseEventLine } from './export-format';
import { SEAL_EVENT_TYPE, SEAL_STREAM } from './seal';

/*
 * The work on one event line that depends on no other line (parse, shape check, hash), so that it can run on
 * worker threads (`verify-pool.ts`) while the ordered checks stay on the calling thread. A batch of lines is
 * answered in columns (`AnalyzedBatch`): typed arrays whose buffers a worker transfers, hashes as 32 raw
 * bytes, and only the stream ids as strings — no object per line crosses threads.
 */

/** What a line is (`AnalyzedBatch.kinds`). */
export const LINE_BLANK = 0;
export const LINE_MALFORMED = 1;
/** An event whose hash matches (`eventHash(prev, event) === hash`). */
export const LINE_EVENT = 2;
/** An event whose hash does not match. */
export const LINE_EVENT_BAD_HASH = 3;
/** An event whose hash could not be computed (`hashErrors` holds what was thrown). */
export const LINE_EVENT_HASH_THREW = 4;
/** Flag added to an event kind: a seal event (`sealData` holds its data). */
export const LINE_SEAL_FLAG = 8;

export interface AnalyzedBatch {
  readonly count: number;
  /** `LINE_*` per line, `| LINE_SEAL_FLAG` for a seal event. */
  readonly kinds: Uint8Array;
  /** UTF-8 length of the line's text plus one (its line break), as the verifier counts bytes. */
  readonly byteLengths: Float64Array;
  readonly positions: Float64Array;
  readonly revisions: Float64Array;
  /** `prev` of line i at bytes 32i..32i+31; zeros for a line that is not an event. */
  readonly prevs: Uint8Array;
  /** `hash` (as written in the line) of line i at bytes 32i..32i+31. */
  readonly hashes: Uint8Array;
  /**
   * The stream ids as UTF-8: line i's at bytes `streamIdEnds[i - 1]`..`streamIdEnds[i]` of `streamIdBytes`
   * (empty for a line that is not an event, or whose stream id is not well-formed UTF-16: see `oddStreamIds`).
   */
  streamIdBytes: Uint8Array;
  readonly streamIdEnds: Uint32Array;
  /** Sparse by line index: a stream id with a lone surrogate, which UTF-8 cannot carry (kept as a string). */
  readonly oddStreamIds: Record<number, string>;
  /** Sparse by line index: the detail of a malformed line, the data of a seal event, what a hash threw. */
  readonly details: Record<number, string>;
  readonly sealData: Record<number, unknown>;
  readonly hashErrors: Record<number, unknown>;
}

export const isSealEvent = (streamId: string, type: string): boolean => streamId === SEAL_STREAM && type === SEAL_EVENT_TYPE;

/** The typed arrays' buffers, for a worker's transfer list. */
export function batchTransferList(batch: AnalyzedBatch): ArrayBuffer[] {
  return [batch.kinds, batch.byteLengths, batch.positions, batch.revisions, batch.prevs, batch.hashes, batch.streamIdBytes, batch.streamIdEnds].map(
    (array) => array.buffer as ArrayBuffer,
  );
}

/**
 * Parses, shape-checks and hashes event lines (never the header). `byteLengths`, when given, are the lines'
 * UTF-8 lengths plus one, known already.
 */
export function analyzeLines(texts: readonly string[], byteLengths?: Float64Array): AnalyzedBatch {
  const batch = emptyBatch(texts.length, byteLengths);
  const prevs = Buffer.from(batch.prevs.buffer);
  const hashes = Buffer.from(batch.hashes.buffer);
  const measure = byteLengths === undefined;
  const ids = { bytes: Buffer.from(batch.streamIdBytes.buffer), used: 0 };
  for (let i = 0; i < texts.length; i += 1) {
    const streamId = analyzeInto(batch, prevs, hashes, i, texts[i]!, measure);
    if (streamId !== undefined) {
      // String.prototype.isWellFormed (ES2024): no lone surrogate.
      if (!(streamId as string & { isWellFormed(): boolean }).isWellFormed()) batch.oddStreamIds[i] = streamId;
      else {
        if (ids.used + streamId.length * 3 > ids.bytes.length) {
          const grown = Buffer.alloc(Math.max(ids.bytes.length * 2, ids.used + streamId.length * 3));
          ids.bytes.copy(grown, 0, 0, ids.used);
          ids.bytes = grown;
        }
        ids.used += ids.bytes.write(streamId, ids.used, 'utf8');
      }
    }
    batch.streamIdEnds[i] = ids.used;
  }
  batch.streamIdBytes = new Uint8Array(ids.bytes.buffer, ids.bytes.byteOffset, ids.used);
  return batch;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The lines of a block of export bytes, exactly as `splitLines` yields them when the block is not the start of
 * the export: decoded as UTF-8 (invalid bytes become U+FFFD; a byte order mark is kept, as a streaming decoder
 * keeps one past the first byte), split at `\n`, `\r\n` or a lone `\r`, a break at the very end adding no line.
 * Cut a block only just after a line break (and not between `\r` and `\n`) or at the end of the export.
 * Each line is decoded on its own (line breaks are ASCII, never inside a UTF-8 sequence): small strings that
 * die young, where one string of the whole block would land in the large-object space until a full GC.
 */
export function linesOfBlock(bytes: Uint8Array): string[] {
  return splitBlock(bytes).lines;
}

function splitBlock(bytes: Uint8Array): { lines: string[]; byteLengths?: Float64Array } {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lines: string[] = [];
  if (buffer.indexOf(CR) !== -1) {
    // Rare: a '\r' somewhere. The whole block's text, split as splitLines does.
    const all = buffer.toString('utf8').split(/\r\n|\n|\r/);
    if (all[all.length - 1] === '') all.pop();
    return { lines: all };
  }
  // UTF-8 length of each line plus one, as the verifier counts: valid UTF-8 decodes to text of the same length.
  const lengths: number[] = [];
  let start = 0;
  for (let end = buffer.indexOf(LF); end !== -1; end = buffer.indexOf(LF, start)) {
    lines.push(buffer.toString('utf8', start, end));
    lengths.push(end - start + 1);
    start = end + 1;
  }
  if (start < buffer.length) {
    lines.push(buffer.toString('utf8', start));
    lengths.push(buffer.length - start + 1);
  }
  return isUtf8(buffer) ? { lines, byteLengths: Float64Array.from(lengths) } : { lines };
}

/** `analyzeLines(linesOfBlock(bytes))`. */
export function analyzeBlock(bytes: Uint8Array): AnalyzedBatch {
  const { lines, byteLengths } = splitBlock(bytes);
  return analyzeLines(lines, byteLengths);
}

function emptyBatch(count: number, byteLengths: Float64Array = new Float64Array(count)): AnalyzedBatch {
  return {
    count,
    kinds: new Uint8Array(count),
    byteLengths,
    positions: new Float64Array(count),
    revisions: new Float64Array(count),
    prevs: new Uint8Array(count * 32),
    hashes: new Uint8Array(count * 32),
    streamIdBytes: new Uint8Array(count * 96),
    streamIdEnds: new Uint32Array(count),
    oddStreamIds: {},
    details: {},
    sealData: {},
    hashErrors: {},
  };
}

/** Analyses line i into the batch; its stream id when it is an event. */
function analyzeInto(batch: AnalyzedBatch, prevs: Buffer, hashes: Buffer, i: number, text: string, measure: boolean): string | undefined {
  if (measure) batch.byteLengths[i] = Buffer.byteLength(text, 'utf8') + 1;
  if (text === '') {
    batch.kinds[i] = LINE_BLANK;
    return undefined;
  }
  let event;
  try {
    // The line number only goes into the error's message, which is not kept (the verifier knows the line).
    event = parseEventLine(text, 0);
  } catch (error) {
    if (error instanceof JournalFormatError) {
      batch.kinds[i] = LINE_MALFORMED;
      batch.details[i] = error.detail;
      return undefined;
    }
    throw error;
  }
  let kind: number;
  try {
    const canonical = canonicalEventJson(event.streamId, event.revision, event.id, event.type, event.data, event.metadata, event.recordedAt);
    if (canonical === undefined) throw new TypeError(`event ${event.id} of ${event.streamId} is not JSON`);
    // The same bytes as eventHash (@oncegate/event-store's chain.ts): sha256(prev + "\n" + canonical JSON), hex.
    kind = sha256('sha256', event.prev + '\n' + canonical, 'hex') === event.hash ? LINE_EVENT : LINE_EVENT_BAD_HASH;
  } catch (error) {
    // Rethrown when the verifier reaches this line's hash check, as when it hashed in place.
    kind = LINE_EVENT_HASH_THREW;
    batch.hashErrors[i] = error;
  }
  if (isSealEvent(event.streamId, event.type)) {
    kind |= LINE_SEAL_FLAG;
    batch.sealData[i] = event.data;
  }
  batch.kinds[i] = kind;
  batch.positions[i] = event.position;
  batch.revisions[i] = event.revision;
  // prev and hash are 64 lowercase hex digits (checked by parseEventLine): 32 bytes each.
  prevs.write(event.prev, i * 32, 32, 'hex');
  hashes.write(event.hash, i * 32, 32, 'hex');
  return event.streamId;
}

/** The stream id of line i of a batch (an event line). */
export function streamIdOf(batch: AnalyzedBatch, i: number): string {
  const odd = batch.oddStreamIds[i];
  if (odd !== undefined) return odd;
  const start = i === 0 ? 0 : batch.streamIdEnds[i - 1]!;
  const bytes = batch.streamIdBytes;
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, batch.streamIdEnds[i]! - start).toString('utf8');
}
