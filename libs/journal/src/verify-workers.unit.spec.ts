import { generateKeyPairSync } from 'node:crypto';
import { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JournalEvent } from './export-format';
import { splitLines } from './split-lines';
import { exportLines, linesOf } from './testing/export-lines';
import { JournalBuilder } from './testing/journal-builder';
import { verifyJournal } from './verify';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');

function journal(size: number): string[] {
  const events: JournalEvent[] = [];
  const builder = new JournalBuilder(privateKey, publicKey, (e) => events.push(e));
  for (let i = 0; builder.head < size; i += 1) {
    if (i % 97 === 96) builder.seal([() => builder.append(`execution-${i % 13}`, 'Step', { concurrent: i })]);
    else builder.append(`execution-${i % 13}`, 'Step', { i, text: `ünïcode ✓ ${i}`, nested: { b: [i, -0, 1e21], a: null } });
  }
  builder.seal();
  return exportLines(events);
}

const base = journal(600);
const replaceLine = (lines: string[], line: number, text: string) => lines.map((l, i) => (i === line - 1 ? text : l));
const mutations: Record<string, (lines: string[]) => string[]> = {
  untouched: (l) => l,
  'data edited': (l) => replaceLine(l, 301, l[300]!.replace('ünïcode', 'unicode')),
  'position edited': (l) => replaceLine(l, 250, l[249]!.replace('"position":249', '"position":9249')),
  deleted: (l) => l.filter((_, i) => i !== 400),
  inserted: (l) => [...l.slice(0, 500), l[200]!, ...l.slice(500)],
  swapped: (l) => [...l.slice(0, 100), l[101]!, l[100]!, ...l.slice(102)],
  truncated: (l) => l.slice(0, 450),
  malformed: (l) => replaceLine(l, 333, '{"position":332,'),
  'unknown field': (l) => replaceLine(l, 334, l[333]!.replace('{"position":333,', '{"position":333,"extra":1,')),
  'blank line inside': (l) => [...l.slice(0, 50), '', ...l.slice(50)],
  'blank line last': (l) => [...l, ''],
  'hash throws (Infinity)': (l) => replaceLine(l, 77, l[76]!.replace('"i":75', '"i":1e400')),
  'seal edited': (l) => l.map((t) => t.replace('"sealIndex":3,', '"sealIndex":4,')),
};

describe('verifyJournal with worker threads', () => {
  it.each(Object.entries(mutations))('given %s, then the report is the one of the single-thread verifier', async (_, mutate) => {
    const lines = mutate(base);
    const settle = (workers: number) =>
      verifyJournal(linesOf(lines), publicKey, { workers, batchLines: 7 }).then(
        (report) => ({ report }),
        (error: Error) => ({ error: error.message }),
      );
    const serial = await settle(0);
    // Each mutation is caught (the untouched export and a trailing blank line pass).
    if ('report' in serial) expect(serial.report.ok).toBe(lines === base || lines.at(-1) === '');
    expect(await settle(2)).toEqual(serial);
  });

  it('given a bad option, then it refuses it', async () => {
    await expect(verifyJournal(linesOf(base), publicKey, { workers: -1 })).rejects.toThrow(RangeError);
    await expect(verifyJournal(linesOf(base), publicKey, { batchLines: 0 })).rejects.toThrow(RangeError);
  });
});

describe('splitLines', () => {
  const viaReadline = async (text: string) => {
    const lines: string[] = [];
    for await (const line of createInterface({ input: Readable.from([Buffer.from(text)]), crlfDelay: Infinity })) lines.push(line);
    return lines;
  };
  const text = fc.string({ unit: fc.constantFrom('a', 'é', '😀', '\n', '\r', '\r\n', '{', '"'), maxLength: 60 });

  it('given any text cut into any chunks, then it yields the lines readline yields', async () => {
    await fc.assert(
      fc.asyncProperty(text, fc.array(fc.nat({ max: 200 }), { maxLength: 6 }), fc.boolean(), async (value, cuts, asStrings) => {
        const bytes = Buffer.from(value);
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const chunks: Array<string | Uint8Array> = [];
        let from = 0;
        for (const to of [...at, bytes.length]) {
          // Byte chunks may split a character; string chunks are cut between UTF-16 units of the decoded text.
          chunks.push(bytes.subarray(from, to));
          from = to;
        }
        const input = asStrings ? [value.slice(0, Math.floor(value.length / 2)), value.slice(Math.floor(value.length / 2))] : chunks;
        const lines: string[] = [];
        for await (const line of splitLines(Readable.from(input, { objectMode: true }))) lines.push(line);
        expect(lines).toEqual(await viaReadline(value));
      }),
      { numRuns: 300 },
    );
  });
});
