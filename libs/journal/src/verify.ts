import { createHash, type KeyObject } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { GENESIS_HASH } from '@oncegate/event-store/chain';
import { JournalFormatError, parseHeader, peekPosition, type JournalExportHeader } from './export-format';
import {
  analyzeBlock,
  analyzeLines,
  LINE_BLANK,
  LINE_EVENT,
  LINE_EVENT_HASH_THREW,
  LINE_MALFORMED,
  LINE_SEAL_FLAG,
  batchTransferList,
  linesOfBlock,
  streamIdOf,
  type AnalyzedBatch,
} from './line-analysis';
import { isJournalSealedData, publicKeyId, verifySealSignature, type SealBody } from './seal';
import { defaultVerifyWorkers, VerifyPool, type PoolAnswer } from './verify-pool';

/** What went wrong first. The rules that choose a kind are in libs/journal/README.md. */
export type VerifyFailureKind =
  | 'edited'
  | 'missing'
  | 'inserted'
  | 'reordered'
  | 'unsealed_tail'
  | 'bad_signature'
  | 'malformed';

export interface VerifyFailure {
  readonly kind: VerifyFailureKind;
  /** The event at which the check failed; `null` when the line has none (a malformed line, the end of the file). */
  readonly streamId: string | null;
  readonly revision: number | null;
  readonly position: number | null;
  /** 1-based line of the export (the header is line 1). */
  readonly line: number;
  readonly detail: string;
}

export interface VerifyReport {
  readonly ok: boolean;
  /** Event lines checked (before the failure, if any). */
  readonly events: number;
  /** Seal events whose signature verified. */
  readonly seals: number;
  /** UTF-8 bytes read, newlines included. */
  readonly bytes: number;
  readonly firstPosition: number | null;
  readonly lastPosition: number | null;
  /** Last position covered by a seal whose digest was recomputed (0: none). */
  readonly sealedThrough: number;
  /**
   * Events checked by their hash and stream chain only, not by a seal digest: those before the first
   * seal that can be recomputed in a partial export, and those after the last sealed range.
   */
  readonly chainOnlyEvents: number;
  readonly failure?: VerifyFailure;
}

export interface VerifyOptions {
  /** Accept events after the last seal event (checked by the chain only). Default: false. */
  readonly allowUnsealedTail?: boolean;
  /**
   * Worker threads that parse and hash lines while this thread runs the ordered checks. `0`: everything on
   * the calling thread. A number: that many workers from the first line. Default (unset): the calling thread
   * alone for the first `AUTO_PARALLEL_AFTER_LINES` lines, then, if the export goes on and the machine has
   * more than one core, `defaultVerifyWorkers()` workers for the rest. The report is the same either way.
   */
  readonly workers?: number;
  /** Lines per batch sent to a worker (`verifyJournal`). Default 2000. */
  readonly batchLines?: number;
  /**
   * Bytes per block sent to a worker (`verifyJournalBytes`): a block is cut at the last line break once it
   * holds at least this many bytes (a longer line makes a longer block). Default 1 MiB.
   */
  readonly batchBytes?: number;
}

/** With `workers` unset, exports up to this many lines are verified on the calling thread (a worker costs a start-up). */
export const AUTO_PARALLEL_AFTER_LINES = 20_000;
const DEFAULT_BATCH_LINES = 2000;
const DEFAULT_BATCH_BYTES = 1 << 20;

class VerifyStop {
  constructor(readonly failure: VerifyFailure) {}
}

/** The event of a line, for a failure report. */
interface EventAt {
  readonly streamId: string;
  readonly revision: number;
  readonly position: number;
}

function checkOptions(options: VerifyOptions): void {
  const { workers, batchLines = DEFAULT_BATCH_LINES, batchBytes = DEFAULT_BATCH_BYTES } = options;
  if (workers !== undefined && (!Number.isSafeInteger(workers) || workers < 0)) {
    throw new RangeError(`workers must be a whole number of at least 0, got ${workers}`);
  }
  if (!Number.isSafeInteger(batchLines) || batchLines < 1) {
    throw new RangeError(`batchLines must be a whole number of at least 1, got ${batchLines}`);
  }
  if (!Number.isSafeInteger(batchBytes) || batchBytes < 1) {
    throw new RangeError(`batchBytes must be a whole number of at least 1, got ${batchBytes}`);
  }
}

/**
 * Verifies an NDJSON journal export (docs/design.md section 8) from its lines, streaming: memory grows with the
 * number of streams and the events since the last seal, never with the file. Resolves with the first failure.
 */
export async function verifyJournal(
  lines: AsyncIterable<string>,
  publicKey: KeyObject,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  checkOptions(options);
  const feed = new LineFeed(lines[Symbol.asyncIterator](), options.workers, options.batchLines ?? DEFAULT_BATCH_LINES);
  return new JournalVerifier(feed, publicKey, options.allowUnsealedTail ?? false).run();
}

/**
 * `verifyJournal` over the export's raw bytes (a file stream, stdin) instead of its lines, with the same
 * report: the lines are those `splitLines` yields (UTF-8, `\n`, `\r\n` or a lone `\r`, a final line without
 * newline). The bytes are cut into blocks of about `batchBytes` at line breaks and a worker decodes, splits,
 * parses and hashes a whole block: no string per line is made on the calling thread, which only runs the
 * ordered checks on the workers' columns.
 */
export async function verifyJournalBytes(
  chunks: AsyncIterable<Uint8Array>,
  publicKey: KeyObject,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  checkOptions(options);
  const feed = new ByteFeed(chunks[Symbol.asyncIterator](), options.workers, options.batchBytes ?? DEFAULT_BATCH_BYTES);
  return new JournalVerifier(feed, publicKey, options.allowUnsealedTail ?? false).run();
}

/**
 * `verifyJournalBytes` over a file, read into buffers the verifier owns: each block is read in place after
 * the start of the line the previous block left, and freed as soon as it is checked.
 */
export async function verifyJournalFile(path: string, publicKey: KeyObject, options: VerifyOptions = {}): Promise<VerifyReport> {
  checkOptions(options);
  const file = await open(path, 'r');
  const feed = new ByteFeed(file, options.workers, options.batchBytes ?? DEFAULT_BATCH_BYTES);
  return new JournalVerifier(feed, publicKey, options.allowUnsealedTail ?? false).run();
}

/** A batch of consecutive lines: their analysis (absent when only their texts are wanted) and their texts. */
interface FeedBatch {
  readonly analysis?: AnalyzedBatch;
  texts(): readonly string[];
  /** Frees the batch's buffers once it is checked. */
  release?(): void;
}

/**
 * The lines of the export in order, after the header, in batches analysed (parsed, shape-checked, hashed) in
 * place or by a pool of workers, at most `2 × workers + 1` batches ahead of the verifier: memory stays bounded
 * whatever the export's size.
 */
interface Feed {
  /** The first line's text; `undefined` for an empty export. */
  header(): Promise<string | undefined>;
  /** The next batch with its analysis. */
  next(): Promise<FeedBatch | undefined>;
  /** The next batch's texts alone (scanning on past a failure). */
  nextTexts(): Promise<FeedBatch | undefined>;
  close(): Promise<void>;
}

/** Whether to run a pool now: the option, or (unset) once the export has proved long on a multi-core machine. */
function poolSize(workers: number | undefined, linesSoFar: number): number {
  return workers ?? (linesSoFar >= AUTO_PARALLEL_AFTER_LINES && availableParallelism() > 1 ? defaultVerifyWorkers() : 0);
}

/** Batches of `batchLines` lines from a source of lines; a worker is sent the lines as strings. */
class LineFeed implements Feed {
  /** Lines taken from the source so far (the header included). */
  private pulled = 0;
  private readonly ahead: Array<{ texts: string[]; answer: Promise<PoolAnswer> }> = [];
  private pool: VerifyPool | undefined;
  private sourceDone = false;

  constructor(
    private readonly source: AsyncIterator<string>,
    private readonly workers: number | undefined,
    private readonly batchLines: number,
  ) {}

  header(): Promise<string | undefined> {
    return this.pull();
  }

  async next(): Promise<FeedBatch | undefined> {
    if (this.pool === undefined && !this.startPool()) {
      const texts = await this.pullBatch();
      return texts.length === 0 ? undefined : { analysis: analyzeLines(texts), texts: () => texts };
    }
    await this.fill();
    const batch = this.ahead.shift();
    if (batch === undefined) return undefined;
    const { batch: analysis } = await batch.answer;
    return { analysis, texts: () => batch.texts };
  }

  async nextTexts(): Promise<FeedBatch | undefined> {
    // A batch in flight: its analysis is not needed any more.
    const batch = this.ahead.shift();
    const texts = batch?.texts ?? (await this.pullBatch());
    return texts.length === 0 ? undefined : { texts: () => texts };
  }

  async close(): Promise<void> {
    this.ahead.length = 0;
    try {
      await this.source.return?.();
    } finally {
      await this.pool?.close();
    }
  }

  private startPool(): boolean {
    const size = poolSize(this.workers, this.pulled);
    if (size === 0) return false;
    this.pool = new VerifyPool(size);
    return true;
  }

  /** Reads whole batches and hands them to the pool until enough are in flight or the source is done. */
  private async fill(): Promise<void> {
    const pool = this.pool!;
    while (!this.sourceDone && this.ahead.length < 2 * pool.size + 1) {
      const texts = await this.pullBatch();
      if (texts.length === 0) break;
      const answer = pool.analyze(texts);
      // Batches dropped after a failure are never awaited: their rejection must not go unhandled.
      answer.catch(() => undefined);
      this.ahead.push({ texts, answer });
    }
  }

  private async pullBatch(): Promise<string[]> {
    const texts: string[] = [];
    while (texts.length < this.batchLines) {
      const text = await this.pull();
      if (text === undefined) break;
      texts.push(text);
    }
    return texts;
  }

  private async pull(): Promise<string | undefined> {
    if (this.sourceDone) return undefined;
    const result = await this.source.next();
    if (result.done === true) {
      this.sourceDone = true;
      return undefined;
    }
    this.pulled += 1;
    return result.value;
  }
}

const LF = 0x0a;
const CR = 0x0d;

type Transferable = ArrayBuffer & { transfer(length?: number): ArrayBuffer };

/**
 * `bytes` (starting at offset 0 of a buffer this feed allocated) in a buffer of exactly its length, moved with
 * ArrayBuffer.prototype.transfer (ES2024): usually no copy, and the old buffer is detached.
 */
function exact(bytes: Uint8Array): Uint8Array {
  if (bytes.byteLength === bytes.buffer.byteLength) return bytes;
  return new Uint8Array((bytes.buffer as Transferable).transfer(bytes.byteLength));
}

/**
 * Frees buffers now rather than at the next GC: the calling thread allocates little on its heap, so its GCs
 * are rare, and buffers of finished batches (a megabyte a block) would pile up outside the heap meanwhile.
 */
function release(buffers: readonly ArrayBufferLike[]): void {
  for (const buffer of buffers) {
    if (buffer instanceof ArrayBuffer && !(buffer as ArrayBuffer & { detached: boolean }).detached) (buffer as Transferable).transfer(0);
  }
}

/**
 * Blocks of about `batchBytes` raw bytes cut just after a line break, from a source of byte chunks. Each block
 * is a buffer of its own, transferred to a worker and given back with the answer (for the texts, should a
 * failure need them), or analysed in place.
 */
class ByteFeed implements Feed {
  /** Bytes read and not yet cut into a block, in order. */
  private pending: Uint8Array[] = [];
  private pendingLength = 0;
  /** `pending` is one Uint8Array this feed allocated. */
  private pendingOwned = true;
  private sourceDone = false;
  /** Lines handed out so far, counted as blocks are analysed (for the automatic start of the pool). */
  private lines = 0;
  private readonly ahead: Array<Promise<PoolAnswer>> = [];
  private pool: VerifyPool | undefined;

  constructor(
    private readonly source: AsyncIterator<Uint8Array> | FileHandle,
    private readonly workers: number | undefined,
    private readonly batchBytes: number,
  ) {}

  /** The bytes up to the first line break, decoded as `splitLines` does at the start (a byte order mark dropped). */
  async header(): Promise<string | undefined> {
    for (;;) {
      const all = this.joinPending();
      const lf = all.indexOf(LF);
      const cr = all.indexOf(CR);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      // A '\r' at the end of what was read may be the first half of '\r\n': read on.
      if (end !== -1 && (all[end] === LF || end + 1 < all.length || this.sourceDone)) {
        const next = all[end] === CR && all[end + 1] === LF ? end + 2 : end + 1;
        this.setPending(all.subarray(next));
        return new TextDecoder('utf-8').decode(all.subarray(0, end));
      }
      if (this.sourceDone) {
        this.setPending(new Uint8Array(0));
        const text = new TextDecoder('utf-8').decode(all);
        return text.length === 0 ? undefined : text;
      }
      await this.read();
    }
  }

  async next(): Promise<FeedBatch | undefined> {
    if (this.pool === undefined && !this.startPool()) {
      const block = await this.nextBlock();
      if (block === undefined) return undefined;
      const analysis = analyzeBlock(block);
      this.lines += analysis.count;
      return { analysis, texts: () => linesOfBlock(block), release: () => release([block.buffer, ...batchTransferList(analysis)]) };
    }
    await this.fill();
    const answer = this.ahead.shift();
    if (answer === undefined) return undefined;
    const { batch, block } = await answer;
    return {
      analysis: batch,
      texts: () => linesOfBlock(new Uint8Array(block!)),
      release: () => release([block!, ...batchTransferList(batch)]),
    };
  }

  async nextTexts(): Promise<FeedBatch | undefined> {
    const answer = this.ahead.shift();
    if (answer !== undefined) {
      const { block } = await answer;
      return { texts: () => linesOfBlock(new Uint8Array(block!)) };
    }
    const block = await this.nextBlock();
    return block === undefined ? undefined : { texts: () => linesOfBlock(block) };
  }

  async close(): Promise<void> {
    this.ahead.length = 0;
    this.pending = [];
    try {
      if ('next' in this.source) await this.source.return?.();
      else await this.source.close();
    } finally {
      await this.pool?.close();
    }
  }

  private startPool(): boolean {
    const size = poolSize(this.workers, this.lines);
    if (size === 0) return false;
    this.pool = new VerifyPool(size);
    return true;
  }

  private async fill(): Promise<void> {
    const pool = this.pool!;
    while (this.ahead.length < 2 * pool.size + 1) {
      const block = await this.nextBlock();
      if (block === undefined) break;
      const answer = pool.analyzeBlock(block.buffer as ArrayBuffer);
      answer.catch(() => undefined);
      this.ahead.push(answer);
    }
  }

  /**
   * The next block, in a buffer of its own: at least `batchBytes` bytes (unless the export ends first) up to
   * and including the last line break read — a '\n', or a lone '\r' when the bytes hold no '\n' (then the
   * byte after it is read and is not '\n') — so that no line, and no '\r\n', is cut in two.
   */
  private async nextBlock(): Promise<Uint8Array | undefined> {
    for (;;) {
      while (!this.sourceDone && this.pendingLength < this.batchBytes) await this.read();
      if (this.pendingLength === 0) return undefined;
      const all = this.joinPending();
      if (this.sourceDone) {
        this.setPending(new Uint8Array(0));
        return exact(all);
      }
      let cut = all.lastIndexOf(LF) + 1;
      if (cut === 0) {
        const cr = all.lastIndexOf(CR);
        cut = cr !== -1 && cr + 1 < all.length ? cr + 1 : 0;
      }
      if (cut === 0) {
        // One line longer than a block so far: read on.
        await this.read();
        continue;
      }
      this.setPending(all.slice(cut));
      return exact(all.subarray(0, cut));
    }
  }

  /** The pending bytes as one Uint8Array over a buffer of its own (exactly its length). */
  private joinPending(): Uint8Array {
    if (this.pending.length === 1 && this.pendingOwned) {
      // Bytes in a buffer of this feed's own (never a chunk of the source's, whose buffer it may reuse).
      const only = this.pending[0]!;
      if (only.byteOffset === 0) return only;
    }
    const all = new Uint8Array(this.pendingLength);
    let at = 0;
    for (const piece of this.pending) {
      all.set(piece, at);
      at += piece.byteLength;
    }
    this.setPending(all);
    return all;
  }

  private setPending(bytes: Uint8Array): void {
    this.pendingOwned = true;
    this.pending = bytes.byteLength === 0 ? [] : [bytes];
    this.pendingLength = bytes.byteLength;
  }

  /** Appends the source's next chunk to the pending bytes; false at the end of the source. */
  private async read(): Promise<boolean> {
    if (this.sourceDone) return false;
    if (!('next' in this.source)) {
      // A file: read into a buffer of this feed's own that starts with the pending bytes (a line's start).
      const want = this.batchBytes;
      const into = new Uint8Array(this.pendingLength + want);
      let at = 0;
      for (const piece of this.pending) {
        into.set(piece, at);
        at += piece.byteLength;
      }
      const { bytesRead } = await this.source.read(into, at, want, null);
      if (bytesRead === 0) {
        this.sourceDone = true;
        return false;
      }
      this.pending = [into.subarray(0, at + bytesRead)];
      this.pendingLength = at + bytesRead;
      this.pendingOwned = true;
      return true;
    }
    const result = await this.source.next();
    if (result.done === true) {
      this.sourceDone = true;
      return false;
    }
    const chunk = result.value;
    if (!(chunk instanceof Uint8Array)) throw new TypeError('verifyJournalBytes reads Uint8Array chunks (a file stream without an encoding)');
    if (chunk.byteLength > 0) {
      this.pendingOwned = false;
      this.pending.push(chunk);
      this.pendingLength += chunk.byteLength;
    }
    return true;
  }
}

/**
 * The chain head of every stream seen: its last revision and hash — all the verifier keeps per stream, and
 * what it must keep (the next event of a stream can come at any later position, and its `prev` must be
 * checked against the full hash). Kept off the JS heap, as a journal has as many streams as executions: the
 * stream ids' UTF-8 bytes in arena pages, an open-addressing index (FNV-1a over the bytes, compared byte for
 * byte on a hit), and per slot the id's place in the arena, the revision and the 32-byte hash in typed-array
 * pages of 1024 slots — about 120 bytes a stream where a Map of id strings to objects with hex strings took
 * ~330 of heap. Pages are added, never copied: no moment holds an old and a grown copy of the table.
 * A stream id that UTF-8 cannot carry (a lone surrogate) is kept in a Map of its own.
 */
class StreamTips {
  /** Slots per page: slot s is entry s % SLOTS of page s / SLOTS (pages never move: no copy when they grow). */
  private static readonly SLOTS = 1024;
  /** Bytes per arena page; a longer stream id gets a page of its own. */
  private static readonly ARENA = 1 << 16;
  /** Stream ids' UTF-8 bytes; an id never straddles two pages. */
  private readonly arena: Uint8Array[] = [];
  private arenaUsed = StreamTips.ARENA;
  /** Per slot, three words: arena page, offset in it, length of its id (0 for a slot of the odd map). */
  private readonly keys: Uint32Array[] = [];
  private readonly revisions: Float64Array[] = [];
  /** Per slot, the head hash as 8 words. */
  private readonly hashes: Int32Array[] = [];
  private count = 0;
  /** Open addressing: slot + 1, 0 for an empty entry; at most half full. */
  private index = new Int32Array(4096);
  private readonly odd = new Map<string, number>();

  /** The slot of line i's stream in `batch`, or -1 when it was not seen. */
  slot(batch: AnalyzedBatch, i: number): number {
    const odd = batch.oddStreamIds[i];
    if (odd !== undefined) return this.odd.get(odd) ?? -1;
    const bytes = batch.streamIdBytes;
    const start = i === 0 ? 0 : batch.streamIdEnds[i - 1]!;
    const end = batch.streamIdEnds[i]!;
    const mask = this.index.length - 1;
    for (let at = fnv1a(bytes, start, end) & mask; ; at = (at + 1) & mask) {
      const entry = this.index[at]!;
      if (entry === 0) return -1;
      if (this.keyEquals(entry - 1, bytes, start, end)) return entry - 1;
    }
  }

  revision(slot: number): number {
    return this.revisions[(slot / StreamTips.SLOTS) | 0]![slot % StreamTips.SLOTS]!;
  }

  /** A new stream (line i's, not seen before) at `revision` with the hash of line i. */
  add(batch: AnalyzedBatch, i: number, revision: number, hashes: Int32Array): void {
    const slot = this.count;
    const SLOTS = StreamTips.SLOTS;
    if (slot % SLOTS === 0) {
      this.keys.push(new Uint32Array(SLOTS * 3));
      this.revisions.push(new Float64Array(SLOTS));
      this.hashes.push(new Int32Array(SLOTS * 8));
    }
    this.count += 1;
    const keys = this.keys[(slot / SLOTS) | 0]!;
    const k = (slot % SLOTS) * 3;
    const odd = batch.oddStreamIds[i];
    if (odd !== undefined) {
      this.odd.set(odd, slot);
      keys[k + 2] = 0;
    } else {
      const bytes = batch.streamIdBytes;
      const start = i === 0 ? 0 : batch.streamIdEnds[i - 1]!;
      const length = batch.streamIdEnds[i]! - start;
      if (this.arenaUsed + length > StreamTips.ARENA || this.arena.length === 0) {
        this.arena.push(new Uint8Array(Math.max(StreamTips.ARENA, length)));
        this.arenaUsed = 0;
      }
      const page = this.arena.length - 1;
      this.arena[page]!.set(bytes.subarray(start, start + length), this.arenaUsed);
      keys[k] = page;
      keys[k + 1] = this.arenaUsed;
      keys[k + 2] = length;
      this.arenaUsed += length;
      if (2 * (this.count - this.odd.size) > this.index.length) this.growIndex();
      this.insert(slot, fnv1a(bytes, start, start + length));
    }
    this.set(slot, revision, hashes, i);
  }

  /** Moves the stream's head to `revision` with the hash at line `at` of `hashes` (8 words a line). */
  set(slot: number, revision: number, hashes: Int32Array, at: number): void {
    const page = (slot / StreamTips.SLOTS) | 0;
    const entry = slot % StreamTips.SLOTS;
    this.revisions[page]![entry] = revision;
    const words = this.hashes[page]!;
    for (let k = 0; k < 8; k += 1) words[entry * 8 + k] = hashes[at * 8 + k]!;
  }

  /** Whether the 32 bytes of `prevs` at line `at` are the stream's head hash. */
  linksTo(slot: number, prevs: Int32Array, at: number): boolean {
    const words = this.hashes[(slot / StreamTips.SLOTS) | 0]!;
    const entry = slot % StreamTips.SLOTS;
    for (let k = 0; k < 8; k += 1) if (words[entry * 8 + k] !== prevs[at * 8 + k]) return false;
    return true;
  }

  private keyEquals(slot: number, bytes: Uint8Array, start: number, end: number): boolean {
    const keys = this.keys[(slot / StreamTips.SLOTS) | 0]!;
    const k = (slot % StreamTips.SLOTS) * 3;
    const length = keys[k + 2]!;
    if (length !== end - start) return false;
    const arena = this.arena[keys[k]!]!;
    const offset = keys[k + 1]!;
    for (let b = 0; b < length; b += 1) if (arena[offset + b] !== bytes[start + b]) return false;
    return true;
  }

  private insert(slot: number, hash: number): void {
    const mask = this.index.length - 1;
    let at = hash & mask;
    while (this.index[at] !== 0) at = (at + 1) & mask;
    this.index[at] = slot + 1;
  }

  private growIndex(): void {
    const length = this.index.length * 2;
    release([this.index.buffer]);
    this.index = new Int32Array(length);
    for (let slot = 0; slot < this.count - 1; slot += 1) {
      const keys = this.keys[(slot / StreamTips.SLOTS) | 0]!;
      const k = (slot % StreamTips.SLOTS) * 3;
      // Stream ids are not empty (parseEventLine): a zero length is a slot of the odd map, not indexed.
      if (keys[k + 2] === 0) continue;
      const offset = keys[k + 1]!;
      this.insert(slot, fnv1a(this.arena[keys[k]!]!, offset, offset + keys[k + 2]!));
    }
  }
}

/** 32-bit FNV-1a over bytes start..end. */
function fnv1a(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let k = start; k < end; k += 1) hash = Math.imul(hash ^ bytes[k]!, 0x01000193);
  return hash >>> 0;
}

/** The event of line i, for a report (a failure, the start of an unsealed tail): its stream id decoded only then. */
function eventAt(batch: AnalyzedBatch, i: number): EventAt {
  return { streamId: streamIdOf(batch, i), revision: batch.revisions[i]!, position: batch.positions[i]! };
}

/** The genesis hash (64 zeros) as 32 bytes: 8 zero words. */
const GENESIS_WORDS = new Int32Array(8);

/** Whether the 32 bytes of line `at` in `words` are those of `expected` (8 words). */
function sameWords(words: Int32Array, at: number, expected: Int32Array): boolean {
  for (let k = 0; k < 8; k += 1) if (words[at * 8 + k] !== expected[k]) return false;
  return true;
}

class JournalVerifier {
  private line = 0;
  private bytes = 0;
  private events = 0;
  private seals = 0;
  private header!: JournalExportHeader;
  private firstPosition: number | null = null;
  private lastPosition: number | null = null;
  private sealedThrough = 0;
  private chainOnly = 0;
  private readonly streams = new StreamTips();
  /** Hashes (32 bytes, 8 words each) of positions windowStart, windowStart + 1, … not yet covered by a seal. */
  private window = new Int32Array(8 * 16_384);
  private windowLength = 0;
  private windowStart = 0;
  private lastSeal: SealBody | undefined;
  /** The first event after the last seal event: where an unsealed tail starts. */
  private tailStart: { streamId: string; revision: number; position: number; line: number } | undefined;
  private blankLine: number | undefined;
  private readonly keyId: string;
  /** The batch being checked, and the next line of it. */
  private batch: FeedBatch | undefined;
  private batchTexts: readonly string[] | undefined;
  private row = 0;
  private rows = 0;

  constructor(
    private readonly feed: Feed,
    private readonly publicKey: KeyObject,
    private readonly allowUnsealedTail: boolean,
  ) {
    this.keyId = publicKeyId(publicKey);
  }

  async run(): Promise<VerifyReport> {
    try {
      await this.check();
      return this.report();
    } catch (error) {
      if (error instanceof VerifyStop) return this.report(error.failure);
      throw error;
    } finally {
      // Stopping at a failure leaves the source open (a file stream) and workers running: release them.
      await this.feed.close();
    }
  }

  private report(failure?: VerifyFailure): VerifyReport {
    const base = {
      ok: failure === undefined,
      events: this.events,
      seals: this.seals,
      bytes: this.bytes,
      firstPosition: this.firstPosition,
      lastPosition: this.lastPosition,
      sealedThrough: this.sealedThrough,
      chainOnlyEvents: this.chainOnly + (failure === undefined ? this.windowLength : 0),
    };
    return failure === undefined ? base : { ...base, failure };
  }

  /** The next line's text (scanning on past a failure). */
  private async nextLine(): Promise<string | undefined> {
    while (this.row >= this.rows) {
      const batch = await this.feed.nextTexts();
      if (batch === undefined) return undefined;
      this.batch = batch;
      this.batchTexts = batch.texts();
      this.row = 0;
      this.rows = this.batchTexts.length;
    }
    this.batchTexts ??= this.batch!.texts();
    const text = this.batchTexts[this.row++]!;
    this.line += 1;
    this.bytes += Buffer.byteLength(text, 'utf8') + 1;
    return text;
  }

  private fail(
    kind: VerifyFailureKind,
    detail: string,
    at: { streamId: string; revision: number; position: number } | null,
    line = this.line,
  ): never {
    throw new VerifyStop({
      kind,
      streamId: at?.streamId ?? null,
      revision: at?.revision ?? null,
      position: at?.position ?? null,
      line,
      detail,
    });
  }

  private async check(): Promise<void> {
    const headerLine = await this.feed.header();
    if (headerLine === undefined) this.fail('malformed', 'the export is empty: no header line', null, 1);
    this.line = 1;
    this.bytes = Buffer.byteLength(headerLine, 'utf8') + 1;
    try {
      this.header = parseHeader(headerLine, 1);
    } catch (error) {
      if (error instanceof JournalFormatError) this.fail('malformed', error.detail, null);
      throw error;
    }
    this.windowStart = this.header.fromPosition + 1;
    const partial = this.header.fromPosition > 0;
    const toPosition = this.header.toPosition;

    for (let batch = await this.feed.next(); batch !== undefined; batch = await this.feed.next()) {
      const analysis = batch.analysis!;
      this.batch = batch;
      this.batchTexts = undefined;
      this.rows = analysis.count;
      const { kinds, byteLengths, positions, revisions } = analysis;
      const prevWords = new Int32Array(analysis.prevs.buffer, analysis.prevs.byteOffset, analysis.prevs.byteLength / 4);
      const hashWords = new Int32Array(analysis.hashes.buffer, analysis.hashes.byteOffset, analysis.hashes.byteLength / 4);
      for (this.row = 0; this.row < this.rows; ) {
        const i = this.row++;
        this.line += 1;
        this.bytes += byteLengths[i]!;
        // A blank line is tolerated only as the last line (a trailing newline split naively).
        if (this.blankLine !== undefined) this.fail('malformed', 'blank line inside the export', null, this.blankLine);
        const kind = kinds[i]!;
        if (kind === LINE_BLANK) {
          this.blankLine = this.line;
          continue;
        }
        if (kind === LINE_MALFORMED) this.fail('malformed', analysis.details[i]!, null);
        const position = positions[i]!;
        const revision = revisions[i]!;
        const expected = (this.lastPosition ?? this.header.fromPosition) + 1;
        if (position !== expected || position > toPosition) await this.positionFailure(eventAt(analysis, i), expected);

        // The per-event checks, in order: hash, stream chain, seal.
        const eventKind = kind & ~LINE_SEAL_FLAG;
        if (eventKind === LINE_EVENT_HASH_THREW) throw analysis.hashErrors[i];
        if (eventKind !== LINE_EVENT) this.fail('edited', 'the event does not match its hash: a field was changed', eventAt(analysis, i));
        const slot = this.streams.slot(analysis, i);
        if (slot === -1) {
          if (!partial && revision !== 0) {
            this.fail('missing', `first event of the stream is revision ${revision}: revisions 0..${revision - 1} are absent`, eventAt(analysis, i));
          }
          // In a partial export the first event seen of a stream anchors its chain.
          if (revision === 0 && !sameWords(prevWords, i, GENESIS_WORDS)) {
            this.fail('edited', 'revision 0 does not link to the genesis hash', eventAt(analysis, i));
          }
          this.streams.add(analysis, i, revision, hashWords);
        } else {
          const tip = this.streams.revision(slot);
          if (revision > tip + 1) {
            this.fail('missing', `revision ${revision} follows revision ${tip}: revisions in between are absent`, eventAt(analysis, i));
          }
          if (revision <= tip) {
            this.fail('inserted', `revision ${revision} repeats a revision already seen (the stream is at ${tip})`, eventAt(analysis, i));
          }
          if (!this.streams.linksTo(slot, prevWords, i)) {
            this.fail('edited', `prev does not link to revision ${tip}'s hash: one of the two events was replaced`, eventAt(analysis, i));
          }
          this.streams.set(slot, revision, hashWords, i);
        }

        this.events += 1;
        this.firstPosition ??= position;
        this.lastPosition = position;
        this.pushWindow(hashWords, i);
        if ((kind & LINE_SEAL_FLAG) !== 0) {
          this.checkSeal(eventAt(analysis, i), analysis.sealData[i]);
          this.tailStart = undefined;
        } else {
          this.tailStart ??= { ...eventAt(analysis, i), line: this.line };
        }
      }
      batch.release?.();
    }

    const end = this.lastPosition ?? this.header.fromPosition;
    if (this.tailStart !== undefined && !this.allowUnsealedTail) {
      const at = this.tailStart;
      this.fail(
        'unsealed_tail',
        `${end - at.position + 1} event(s) from position ${at.position} follow the last seal event` +
          (this.seals === 0 ? ' (the export holds no seal)' : ''),
        at,
        at.line,
      );
    }
    if (end < this.header.toPosition) {
      this.fail(
        'missing',
        `the export ends at position ${end} but its header says it runs to ${this.header.toPosition}: truncated`,
        null,
        this.line + 1,
      );
    }
  }

  private pushWindow(hashes: Int32Array, at: number): void {
    if (this.windowLength * 8 === this.window.length) {
      const grown = new Int32Array(this.window.length * 2);
      grown.set(this.window);
      release([this.window.buffer]);
      this.window = grown;
    }
    const window = this.window;
    const to = this.windowLength * 8;
    for (let k = 0; k < 8; k += 1) window[to + k] = hashes[at * 8 + k]!;
    this.windowLength += 1;
  }

  /** Forgets the first `count` hashes of the window. */
  private shiftWindow(count: number): void {
    this.window.copyWithin(0, count * 8, this.windowLength * 8);
    this.windowLength -= count;
    this.windowStart += count;
  }

  private checkSeal(event: EventAt, data: unknown): void {
    if (!isJournalSealedData(data)) this.fail('bad_signature', 'the seal event does not carry a seal body and signature', event);
    if (!verifySealSignature(data, this.publicKey)) {
      const other = data.keyId !== this.keyId ? ` (seal names key ${data.keyId}, the key given is ${this.keyId})` : '';
      this.fail('bad_signature', `seal #${data.sealIndex}'s signature does not verify${other}`, event);
    }
    this.seals += 1;
    if (data.toPosition >= event.position || data.toPosition <= data.fromPosition) {
      this.fail('reordered', `seal #${data.sealIndex} covers (${data.fromPosition}, ${data.toPosition}] but stands at position ${event.position}`, event);
    }

    let recompute: boolean;
    const last = this.lastSeal;
    if (last !== undefined) {
      const index = last.sealIndex + 1;
      if (data.sealIndex > index || data.fromPosition > last.toPosition) {
        this.fail('missing', `seal #${data.sealIndex} from ${data.fromPosition} follows seal #${last.sealIndex} to ${last.toPosition}: a seal is absent`, event);
      }
      if (data.sealIndex < index || data.fromPosition < last.toPosition || data.previousDigest !== last.digest) {
        this.fail('inserted', `seal #${data.sealIndex} does not chain to seal #${last.sealIndex}`, event);
      }
      recompute = true;
    } else if (this.header.fromPosition === 0) {
      if (data.sealIndex !== 0 || data.fromPosition !== 0 || data.previousDigest !== GENESIS_HASH) {
        this.fail('missing', `the first seal of a full export is seal #${data.sealIndex} from ${data.fromPosition}: earlier seals are absent`, event);
      }
      recompute = true;
    } else {
      // Partial export: a range that starts before the export cannot be recomputed; that seal anchors the next.
      recompute = data.fromPosition >= this.header.fromPosition;
    }

    const covered = data.toPosition - data.fromPosition;
    if (recompute) {
      this.dropWindowThrough(data.fromPosition);
      if (this.windowStart !== data.fromPosition + 1 || this.windowLength < covered) {
        this.fail('missing', `seal #${data.sealIndex}'s range (${data.fromPosition}, ${data.toPosition}] is not in the export`, event);
      }
      if (data.eventCount !== covered) {
        this.fail(
          data.eventCount > covered ? 'missing' : 'inserted',
          `seal #${data.sealIndex} counts ${data.eventCount} events in (${data.fromPosition}, ${data.toPosition}], the export holds ${covered}`,
          event,
        );
      }
      // SealDigest's bytes: sha256 over previousDigest then each covered hash, all as lowercase hex.
      const hex = Buffer.from(this.window.buffer, 0, covered * 32).toString('hex');
      if (createHash('sha256').update(data.previousDigest).update(hex).digest('hex') !== data.digest) {
        this.fail(
          'edited',
          `the events in (${data.fromPosition}, ${data.toPosition}] do not match seal #${data.sealIndex}'s digest: one was replaced with a re-hashed event`,
          event,
        );
      }
      this.shiftWindow(covered);
      this.sealedThrough = data.toPosition;
    } else {
      this.dropWindowThrough(data.toPosition);
    }
    this.lastSeal = data;
  }

  /** Forgets hashes at or before `position`; they were checked by the chain only. */
  private dropWindowThrough(position: number): void {
    const drop = Math.min(this.windowLength, Math.max(0, position - this.windowStart + 1));
    if (drop === 0) return;
    this.shiftWindow(drop);
    this.chainOnly += drop;
  }

  /**
   * The line reads position q where e was due. Reads on (positions only, constant memory) to tell which
   * mutation explains it; the rules are listed in libs/journal/README.md.
   */
  private async positionFailure(event: EventAt, expected: number): Promise<never> {
    const line = this.line;
    const q = event.position;
    const nextText = await this.nextLine();
    const next = nextText === undefined ? undefined : peekPosition(nextText);
    let foundExpected = next === expected;
    let repeated = next === q;
    for (let text = await this.nextLine(); text !== undefined && !(foundExpected && repeated); text = await this.nextLine()) {
      const p = peekPosition(text);
      if (p === expected) foundExpected = true;
      else if (p === q) repeated = true;
    }
    const at = event;
    if (next === expected + 1 && !foundExpected && q !== expected) {
      this.fail('edited', `the line stands where position ${expected} belongs but reads ${q}: its position was changed`, at, line);
    }
    if (q > this.header.toPosition) {
      this.fail('inserted', `position ${q} is beyond the export's toPosition ${this.header.toPosition}`, at, line);
    }
    if (q < expected) this.fail('inserted', `position ${q} was already passed (expected ${expected}): the line is extra`, at, line);
    if (repeated) this.fail('inserted', `position ${q} appears again further on (expected ${expected} here): the line is extra`, at, line);
    if (foundExpected) {
      this.fail('reordered', `position ${q} stands where ${expected} belongs; ${expected} comes later in the file`, at, line);
    }
    this.fail('missing', `position ${expected}${q - 1 > expected ? `..${q - 1}` : ''} is absent: ${q} follows ${expected - 1}`, at, line);
  }
}
