import type { KeyObject } from 'node:crypto';
import { eventHash, GENESIS_HASH } from './chain';
import {
  JournalFormatError,
  parseEventLine,
  parseHeader,
  peekPosition,
  type JournalEvent,
  type JournalExportHeader,
} from './export-format';
import {
  isJournalSealedData,
  publicKeyId,
  SEAL_EVENT_TYPE,
  SEAL_STREAM,
  SealDigest,
  verifySealSignature,
  type SealBody,
} from './seal';

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
}

interface StreamTip {
  revision: number;
  hash: string;
}

class VerifyStop {
  constructor(readonly failure: VerifyFailure) {}
}

/**
 * Verifies an NDJSON journal export (DESIGN section 8) from its lines, streaming: memory grows with the
 * number of streams and the events since the last seal, never with the file. Resolves with the first failure.
 */
export async function verifyJournal(
  lines: AsyncIterable<string>,
  publicKey: KeyObject,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  const verifier = new JournalVerifier(lines[Symbol.asyncIterator](), publicKey, options.allowUnsealedTail ?? false);
  return verifier.run();
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
    private readonly lines: AsyncIterator<string>,
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
      // Stopping at a failure leaves the source open (a file stream): release it.
      await this.lines.return?.();
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

  private async nextLine(): Promise<string | undefined> {
    const result = await this.lines.next();
    if (result.done === true) return undefined;
    this.line += 1;
    this.bytes += Buffer.byteLength(result.value, 'utf8') + 1;
    return result.value;
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

    for (let text = await this.nextLine(); text !== undefined; text = await this.nextLine()) {
      // A blank line is tolerated only as the last line (a trailing newline split naively).
      if (this.blankLine !== undefined) this.fail('malformed', 'blank line inside the export', null, this.blankLine);
      if (text === '') {
        this.blankLine = this.line;
        continue;
      }
      let event: JournalEvent;
      try {
        event = parseEventLine(text, this.line);
      } catch (error) {
        if (error instanceof JournalFormatError) this.fail('malformed', error.detail, null);
        throw error;
      }
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
  private checkEvent(event: JournalEvent): void {
    if (eventHash(event.prev, event) !== event.hash) {
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
    if (event.streamId === SEAL_STREAM && event.type === SEAL_EVENT_TYPE) {
      this.checkSeal(event);
      this.tailStart = undefined;
    } else {
      this.tailStart ??= { streamId: event.streamId, revision: event.revision, position: event.position, line: this.line };
    }
  }

  private checkSeal(event: JournalEvent): void {
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
  private async positionFailure(event: JournalEvent, expected: number): Promise<never> {
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
