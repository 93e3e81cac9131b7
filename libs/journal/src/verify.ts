import type { KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { GENESIS_HASH } from './chain';
import { JournalFormatError, parseHeader, peekPosition, type JournalExportHeader } from './export-format';
import { analyzeLine, isSealEvent, type AnalyzedEvent, type LineAnalysis } from './line-analysis';
import { isJournalSealedData, publicKeyId, SealDigest, verifySealSignature, type SealBody } from './seal';
import { defaultVerifyWorkers, VerifyPool } from './verify-pool';

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
  /** Lines per batch sent to a worker. Default 2000. */
  readonly batchLines?: number;
}

/** With `workers` unset, exports up to this many lines are verified on the calling thread (a worker costs a start-up). */
export const AUTO_PARALLEL_AFTER_LINES = 20_000;
const DEFAULT_BATCH_LINES = 2000;

interface StreamTip {
  revision: number;
  hash: string;
}

class VerifyStop {
  constructor(readonly failure: VerifyFailure) {}
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
  const { workers, batchLines = DEFAULT_BATCH_LINES } = options;
  if (workers !== undefined && (!Number.isSafeInteger(workers) || workers < 0)) {
    throw new RangeError(`workers must be a whole number of at least 0, got ${workers}`);
  }
  if (!Number.isSafeInteger(batchLines) || batchLines < 1) {
    throw new RangeError(`batchLines must be a whole number of at least 1, got ${batchLines}`);
  }
  const feed = new LineFeed(lines[Symbol.asyncIterator](), workers, batchLines);
  const verifier = new JournalVerifier(feed, publicKey, options.allowUnsealedTail ?? false);
  return verifier.run();
}

/**
 * The lines of the export in order, each event line with its analysis (parsed, shape-checked, hashed). The
 * analysis runs in place, or in a pool of workers that are sent batches of `batchLines` lines, at most
 * `2 × workers + 1` batches ahead of the verifier: memory stays bounded whatever the export's size.
 */
class LineFeed {
  /** Lines taken from the source so far (the header included). */
  private pulled = 0;
  private texts: readonly string[] = [];
  /** Line number of `texts[0]`. */
  private firstLine = 0;
  private results: readonly LineAnalysis[] | undefined;
  private index = 0;
  private readonly ahead: Array<{ texts: string[]; firstLine: number; results: Promise<LineAnalysis[]> }> = [];
  private pool: VerifyPool | undefined;
  private sourceDone = false;

  constructor(
    private readonly source: AsyncIterator<string>,
    private readonly workers: number | undefined,
    private readonly batchLines: number,
  ) {}

  /** The next line's text alone (the header, or scanning on past a failure). */
  async nextText(): Promise<string | undefined> {
    if (this.index < this.texts.length) return this.texts[this.index++]!;
    const batch = this.ahead.shift();
    if (batch !== undefined) {
      // Its analysis is not needed any more.
      this.setBatch(batch.texts, batch.firstLine, undefined);
      return this.texts[this.index++];
    }
    return this.pull();
  }

  /** The next event line (or blank line) with its analysis. */
  async next(): Promise<{ text: string; analysis: LineAnalysis } | undefined> {
    if (this.index < this.texts.length) {
      const i = this.index++;
      const text = this.texts[i]!;
      return { text, analysis: this.results?.[i] ?? analyzeLine(text, this.firstLine + i) };
    }
    if (this.pool === undefined && !this.startPool()) {
      const text = await this.pull();
      return text === undefined ? undefined : { text, analysis: analyzeLine(text, this.pulled) };
    }
    await this.fill();
    const batch = this.ahead.shift();
    if (batch === undefined) return undefined;
    this.setBatch(batch.texts, batch.firstLine, await batch.results);
    return this.next();
  }

  async close(): Promise<void> {
    this.ahead.length = 0;
    try {
      await this.source.return?.();
    } finally {
      await this.pool?.close();
    }
  }

  /** Starts the pool when the options (or the export's length so far) say so; true when it runs. */
  private startPool(): boolean {
    const size =
      this.workers ??
      (this.pulled >= AUTO_PARALLEL_AFTER_LINES && availableParallelism() > 1 ? defaultVerifyWorkers() : 0);
    if (size === 0) return false;
    this.pool = new VerifyPool(size);
    return true;
  }

  /** Reads whole batches and hands them to the pool until enough are in flight or the source is done. */
  private async fill(): Promise<void> {
    const pool = this.pool!;
    while (!this.sourceDone && this.ahead.length < 2 * pool.size + 1) {
      const firstLine = this.pulled + 1;
      const texts: string[] = [];
      while (texts.length < this.batchLines) {
        const text = await this.pull();
        if (text === undefined) break;
        texts.push(text);
      }
      if (texts.length === 0) break;
      const results = pool.analyze(texts, firstLine);
      // Batches dropped after a failure are never awaited: their rejection must not go unhandled.
      results.catch(() => undefined);
      this.ahead.push({ texts, firstLine, results });
    }
  }

  private setBatch(texts: readonly string[], firstLine: number, results: readonly LineAnalysis[] | undefined): void {
    this.texts = texts;
    this.firstLine = firstLine;
    this.results = results;
    this.index = 0;
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
  private readonly streams = new Map<string, StreamTip>();
  /** Hashes of positions windowStart, windowStart + 1, … not yet covered by a seal. */
  private window: string[] = [];
  private windowStart = 0;
  private lastSeal: SealBody | undefined;
  /** The first event after the last seal event: where an unsealed tail starts. */
  private tailStart: { streamId: string; revision: number; position: number; line: number } | undefined;
  private blankLine: number | undefined;
  private readonly keyId: string;

  constructor(
    private readonly feed: LineFeed,
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
      chainOnlyEvents: this.chainOnly + (failure === undefined ? this.window.length : 0),
    };
    return failure === undefined ? base : { ...base, failure };
  }

  /** The next line's text (the header, or scanning on past a failure). */
  private async nextLine(): Promise<string | undefined> {
    const text = await this.feed.nextText();
    if (text === undefined) return undefined;
    this.line += 1;
    this.bytes += Buffer.byteLength(text, 'utf8') + 1;
    return text;
  }

  /** The next event line, parsed and hashed (here or by a worker). */
  private async nextAnalyzed(): Promise<LineAnalysis | undefined> {
    const next = await this.feed.next();
    if (next === undefined) return undefined;
    this.line += 1;
    this.bytes += Buffer.byteLength(next.text, 'utf8') + 1;
    return next.analysis;
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
    const headerLine = await this.nextLine();
    if (headerLine === undefined) this.fail('malformed', 'the export is empty: no header line', null, 1);
    try {
      this.header = parseHeader(headerLine, 1);
    } catch (error) {
      if (error instanceof JournalFormatError) this.fail('malformed', error.detail, null);
      throw error;
    }
    this.windowStart = this.header.fromPosition + 1;

    for (let analysis = await this.nextAnalyzed(); analysis !== undefined; analysis = await this.nextAnalyzed()) {
      // A blank line is tolerated only as the last line (a trailing newline split naively).
      if (this.blankLine !== undefined) this.fail('malformed', 'blank line inside the export', null, this.blankLine);
      if (analysis.kind === 'blank') {
        this.blankLine = this.line;
        continue;
      }
      if (analysis.kind === 'malformed') this.fail('malformed', analysis.detail, null);
      const event = analysis;
      const expected = (this.lastPosition ?? this.header.fromPosition) + 1;
      if (event.position !== expected || event.position > this.header.toPosition) {
        await this.positionFailure(event, expected);
      }
      this.checkEvent(event);
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

  /** The per-event checks, in order: hash, stream chain, seal. */
  private checkEvent(event: AnalyzedEvent): void {
    if ('hashError' in event) throw event.hashError;
    if (!event.hashMatches) {
      this.fail('edited', 'the event does not match its hash: a field was changed', event);
    }
    const tip = this.streams.get(event.streamId);
    if (tip === undefined) {
      const partial = this.header.fromPosition > 0;
      if (!partial && event.revision !== 0) {
        this.fail('missing', `first event of the stream is revision ${event.revision}: revisions 0..${event.revision - 1} are absent`, event);
      }
      // In a partial export the first event seen of a stream anchors its chain.
      if (event.revision === 0 && event.prev !== GENESIS_HASH) {
        this.fail('edited', 'revision 0 does not link to the genesis hash', event);
      }
      this.streams.set(event.streamId, { revision: event.revision, hash: event.hash });
    } else {
      if (event.revision > tip.revision + 1) {
        this.fail('missing', `revision ${event.revision} follows revision ${tip.revision}: revisions in between are absent`, event);
      }
      if (event.revision <= tip.revision) {
        this.fail('inserted', `revision ${event.revision} repeats a revision already seen (the stream is at ${tip.revision})`, event);
      }
      if (event.prev !== tip.hash) {
        this.fail('edited', `prev does not link to revision ${tip.revision}'s hash: one of the two events was replaced`, event);
      }
      tip.revision = event.revision;
      tip.hash = event.hash;
    }

    this.events += 1;
    this.firstPosition ??= event.position;
    this.lastPosition = event.position;
    this.window.push(event.hash);
    if (isSealEvent(event.streamId, event.type)) {
      this.checkSeal(event);
      this.tailStart = undefined;
    } else {
      this.tailStart ??= { streamId: event.streamId, revision: event.revision, position: event.position, line: this.line };
    }
  }

  private checkSeal(event: AnalyzedEvent): void {
    const data = event.data;
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
      if (this.windowStart !== data.fromPosition + 1 || this.window.length < covered) {
        this.fail('missing', `seal #${data.sealIndex}'s range (${data.fromPosition}, ${data.toPosition}] is not in the export`, event);
      }
      if (data.eventCount !== covered) {
        this.fail(
          data.eventCount > covered ? 'missing' : 'inserted',
          `seal #${data.sealIndex} counts ${data.eventCount} events in (${data.fromPosition}, ${data.toPosition}], the export holds ${covered}`,
          event,
        );
      }
      const digest = new SealDigest(data.previousDigest);
      for (let i = 0; i < covered; i += 1) digest.add(this.window[i]!);
      if (digest.digest() !== data.digest) {
        this.fail(
          'edited',
          `the events in (${data.fromPosition}, ${data.toPosition}] do not match seal #${data.sealIndex}'s digest: one was replaced with a re-hashed event`,
          event,
        );
      }
      this.window.splice(0, covered);
      this.windowStart = data.toPosition + 1;
      this.sealedThrough = data.toPosition;
    } else {
      this.dropWindowThrough(data.toPosition);
    }
    this.lastSeal = data;
  }

  /** Forgets hashes at or before `position`; they were checked by the chain only. */
  private dropWindowThrough(position: number): void {
    const drop = Math.min(this.window.length, Math.max(0, position - this.windowStart + 1));
    if (drop === 0) return;
    this.window.splice(0, drop);
    this.windowStart += drop;
    this.chainOnly += drop;
  }

  /**
   * The line reads position q where e was due. Reads on (positions only, constant memory) to tell which
   * mutation explains it; the rules are listed in libs/journal/README.md.
   */
  private async positionFailure(event: AnalyzedEvent, expected: number): Promise<never> {
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
