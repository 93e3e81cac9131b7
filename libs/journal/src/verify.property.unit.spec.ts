import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JournalEvent } from './export-format';
import { SEAL_STREAM } from './seal';
import { exportLines, linesOf } from './testing/export-lines';
import { JournalBuilder } from './testing/journal-builder';
import { verifyJournal, type VerifyFailure } from './verify';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');

type Step =
  | { readonly op: 'append'; readonly stream: number; readonly data: unknown; readonly note: string }
  | { readonly op: 'seal'; readonly concurrent: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('append' as const),
      stream: fc.nat({ max: 4 }),
      data: fc.jsonValue({ maxDepth: 2, stringUnit: 'grapheme' }),
      note: fc.string({ unit: 'grapheme', maxLength: 8 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('seal' as const), concurrent: fc.nat({ max: 2 }) }) },
);

/** A random journal that ends with a seal, optionally followed by an unsealed tail. */
const journalArb = fc
  .record({ steps: fc.array(stepArb, { minLength: 1, maxLength: 40 }), tail: fc.nat({ max: 2 }) })
  .map(({ steps, tail }) => {
    const events: JournalEvent[] = [];
    const journal = new JournalBuilder(privateKey, publicKey, (e) => events.push(e));
    const append = (stream: number, data: unknown, note = '') =>
      journal.append(`execution-${stream}`, 'Step', data, { note, actor: 'agent:ünïcode-✓' });
    append(0, { first: true });
    for (const step of steps) {
      if (step.op === 'append') append(step.stream, step.data, step.note);
      else journal.seal(Array.from({ length: step.concurrent }, (_, i) => () => append(i, { concurrent: i })));
    }
    journal.seal();
    for (let i = 0; i < tail; i += 1) append(i, { tail: i });
    const lastSealIndex = events.findLastIndex((e) => e.streamId === SEAL_STREAM);
    return { events, lines: exportLines(events), tail, lastSealLine: lastSealIndex + 2 };
  });

type Journal = typeof journalArb extends fc.Arbitrary<infer T> ? T : never;
/** Line numbers of event lines at or before the last seal event. */
const sealedLine = (j: Journal, r: number) => 2 + Math.floor(r * (j.lastSealLine - 1));

const verify = (lines: string[], tail: number) => verifyJournal(linesOf(lines), publicKey, { allowUnsealedTail: tail > 0 });

function failureOf(report: { ok: boolean; failure?: VerifyFailure }): VerifyFailure {
  expect(report.ok).toBe(false);
  return report.failure!;
}

const fraction = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

describe('verifyJournal on random journals (property)', () => {
  it('given an untouched export, then it always verifies', async () => {
    await fc.assert(
      fc.asyncProperty(journalArb, async (j) => {
        const report = await verify(j.lines, j.tail);
        expect(report.failure).toBeUndefined();
        expect(report.events).toBe(j.events.length);
      }),
      { numRuns: 150 },
    );
  });

  it('given one field of one sealed event edited, then it reports edited at that line', async () => {
    const fields = ['data', 'type', 'metadata', 'recordedAt', 'id', 'streamId', 'revision', 'prev', 'hash'] as const;
    await fc.assert(
      fc.asyncProperty(journalArb, fraction, fc.constantFrom(...fields), async (j, r, field) => {
        const line = sealedLine(j, r);
        const event = JSON.parse(j.lines[line - 1]!) as Record<string, unknown>;
        const flip = (hex: string) => (hex[0] === 'a' ? 'b' : 'a') + hex.slice(1);
        const changes: Record<(typeof fields)[number], unknown> = {
          data: { tampered: event['data'] },
          type: `${String(event['type'])}x`,
          metadata: { ...(event['metadata'] as object), injected: true },
          recordedAt: '1999-01-01T00:00:00.000Z',
          id: `${String(event['id'])}x`,
          streamId: `${String(event['streamId'])}x`,
          revision: (event['revision'] as number) + 1,
          prev: flip(event['prev'] as string),
          hash: flip(event['hash'] as string),
        };
        event[field] = changes[field];
        const lines = [...j.lines];
        lines[line - 1] = JSON.stringify(event);
        expect(failureOf(await verify(lines, j.tail))).toMatchObject({ kind: 'edited', line, position: event['position'] });
      }),
      { numRuns: 200 },
    );
  });

  it('given the position of one sealed event changed, then it reports that line (edited when a line follows)', async () => {
    await fc.assert(
      fc.asyncProperty(journalArb, fraction, fc.integer({ min: 1, max: 60 }), async (j, r, position) => {
        const line = sealedLine(j, r);
        const event = JSON.parse(j.lines[line - 1]!) as Record<string, unknown>;
        fc.pre(position !== event['position']);
        event['position'] = position;
        const lines = [...j.lines];
        lines[line - 1] = JSON.stringify(event);
        const failure = failureOf(await verify(lines, j.tail));
        expect(failure.line).toBe(line);
        expect(failure.position).toBe(position);
        if (line < lines.length) expect(failure.kind).toBe('edited');
        else expect(['inserted', 'missing']).toContain(failure.kind);
      }),
      { numRuns: 200 },
    );
  });

  it('given one sealed event deleted, then it reports missing at the line that took its place', async () => {
    await fc.assert(
      fc.asyncProperty(journalArb, fraction, async (j, r) => {
        const line = sealedLine(j, r);
        fc.pre(line < j.lines.length); // deleting the very last line is a truncation
        const lines = j.lines.filter((_, i) => i !== line - 1);
        const failure = failureOf(await verify(lines, j.tail));
        expect(failure).toMatchObject({ kind: 'missing', line, position: j.events[line - 1]!.position });
      }),
      { numRuns: 200 },
    );
  });

  it('given a copy of an event inserted before the last seal, then it reports inserted at the copy (or at the original right after it)', async () => {
    await fc.assert(
      fc.asyncProperty(journalArb, fraction, fraction, async (j, r, s) => {
        const at = sealedLine(j, r); // the copy becomes line `at`
        const source = 2 + Math.floor(s * j.events.length);
        const lines = [...j.lines];
        lines.splice(at - 1, 0, j.lines[source - 1]!);
        const failure = failureOf(await verify(lines, j.tail));
        // A copy placed right before its original passes every check; the original, now a repeat, fails.
        const expectedLine = source === at ? at + 1 : at;
        expect(failure).toMatchObject({ kind: 'inserted', line: expectedLine, position: j.events[source - 2]!.position });
      }),
      { numRuns: 200 },
    );
  });

  it('given two sealed events swapped or one moved, then it reports reordered at the first out-of-place line', async () => {
    await fc.assert(
      fc.asyncProperty(journalArb, fraction, fraction, fc.boolean(), async (j, r, s, swap) => {
        const a = sealedLine(j, r);
        const b = sealedLine(j, s);
        fc.pre(a !== b);
        const lines = [...j.lines];
        if (swap) {
          [lines[a - 1], lines[b - 1]] = [lines[b - 1]!, lines[a - 1]!];
        } else {
          const [moved] = lines.splice(a - 1, 1);
          lines.splice(b - 1, 0, moved!);
        }
        const first = Math.min(a, b);
        const failure = failureOf(await verify(lines, j.tail));
        expect(failure).toMatchObject({ kind: 'reordered', line: first, position: JSON.parse(lines[first - 1]!).position });
      }),
      { numRuns: 200 },
    );
  });

  it('given the export truncated before its last seal, then it reports the unsealed tail or the truncation', async () => {
    await fc.assert(
      fc.asyncProperty(journalArb, fraction, fc.boolean(), async (j, r, allowTail) => {
        const keep = 1 + Math.floor(r * (j.lastSealLine - 1)); // header kept, last seal line dropped
        const lines = j.lines.slice(0, keep);
        const report = await verifyJournal(linesOf(lines), publicKey, { allowUnsealedTail: allowTail });
        const failure = failureOf(report);
        const kept = j.events.slice(0, keep - 1);
        const lastSeal = kept.findLastIndex((e) => e.streamId === SEAL_STREAM);
        if (!allowTail && lastSeal < kept.length - 1) {
          expect(failure).toMatchObject({ kind: 'unsealed_tail', line: lastSeal + 3, position: kept[lastSeal + 1]!.position });
        } else {
          expect(failure).toMatchObject({ kind: 'missing', line: keep + 1, position: null });
        }
      }),
      { numRuns: 200 },
    );
  });

  it('given seals signed by another key, then it reports bad_signature at the first seal', async () => {
    const other = generateKeyPairSync('ed25519');
    await fc.assert(
      fc.asyncProperty(journalArb, async (j) => {
        const failure = failureOf(await verifyJournal(linesOf(j.lines), other.publicKey, { allowUnsealedTail: true }));
        const firstSeal = j.events.findIndex((e) => e.streamId === SEAL_STREAM);
        expect(failure).toMatchObject({ kind: 'bad_signature', line: firstSeal + 2 });
      }),
      { numRuns: 50 },
    );
  });
});
