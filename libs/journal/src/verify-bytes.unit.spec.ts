import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { JournalEvent } from './export-format';
import { linesOfBlock } from './line-analysis';
import { splitLines } from './split-lines';
import { exportLines } from './testing/export-lines';
import { JournalBuilder } from './testing/journal-builder';
import { verifyJournal, verifyJournalBytes, verifyJournalFile, type VerifyOptions } from './verify';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const dir = mkdtempSync(join(tmpdir(), 'oncegate-verify-bytes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function journal(size: number, streams = 13, streamName = (i: number) => `execution-${i % streams}`): string[] {
  const events: JournalEvent[] = [];
  const builder = new JournalBuilder(privateKey, publicKey, (e) => events.push(e));
  for (let i = 0; builder.head < size; i += 1) {
    if (i % 97 === 96) builder.seal([() => builder.append(streamName(i), 'Step', { concurrent: i })]);
    else builder.append(streamName(i), 'Step', { i, text: `ünïcode ✓ ${i}`, nested: { b: [i, -0, 1e21], a: null } });
  }
  builder.seal();
  return exportLines(events);
}

const base = journal(400);
const replaceLine = (lines: string[], line: number, text: string) => lines.map((l, i) => (i === line - 1 ? text : l));
const mutations: Record<string, (lines: string[]) => string[]> = {
  untouched: (l) => l,
  'data edited': (l) => replaceLine(l, 301, l[300]!.replace('ünïcode', 'unicode')),
  'position edited': (l) => replaceLine(l, 250, l[249]!.replace('"position":249', '"position":9249')),
  deleted: (l) => l.filter((_, i) => i !== 300),
  inserted: (l) => [...l.slice(0, 350), l[200]!, ...l.slice(350)],
  swapped: (l) => [...l.slice(0, 100), l[101]!, l[100]!, ...l.slice(102)],
  truncated: (l) => l.slice(0, 250),
  malformed: (l) => replaceLine(l, 333, '{"position":332,'),
  'blank line inside': (l) => [...l.slice(0, 50), '', ...l.slice(50)],
  'blank line last': (l) => [...l, ''],
  'hash throws (Infinity)': (l) => replaceLine(l, 77, l[76]!.replace('"i":75', '"i":1e400')),
  'seal edited': (l) => l.map((t) => t.replace('"sealIndex":2,', '"sealIndex":3,')),
  'unsealed tail': (l) => l.slice(0, -1).map((t, i) => (i === 0 ? t.replace(/"toPosition":\d+/, `"toPosition":${l.length - 2}`) : t)),
};

/** How the lines become bytes: the line break, and whether the last line has one. */
const layouts: Record<string, (lines: string[]) => Buffer> = {
  LF: (l) => Buffer.from(l.join('\n') + '\n'),
  'LF, no final newline': (l) => Buffer.from(l.join('\n')),
  CRLF: (l) => Buffer.from(l.join('\r\n') + '\r\n'),
  'lone CR': (l) => Buffer.from(l.join('\r') + '\r'),
  'byte order mark': (l) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(l.join('\n') + '\n')]),
};

/** `bytes` in chunks cut at `cuts` (anywhere: inside a line, a character, a '\r\n'). */
function chunked(bytes: Buffer, cuts: readonly number[]): AsyncIterable<Uint8Array> {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    chunks.push(Uint8Array.prototype.slice.call(bytes, from, to));
    from = to;
  }
  return Readable.from(chunks, { objectMode: true });
}

type Settled = { report: unknown } | { error: string };
const settle = (run: Promise<unknown>): Promise<Settled> =>
  run.then(
    (report) => ({ report }),
    (error: Error) => ({ error: error.message }),
  );

/** The reference: the lines splitLines reads from the same bytes, verified on the calling thread. */
const reference = (bytes: Buffer, options: VerifyOptions = {}) =>
  settle(verifyJournal(splitLines(Readable.from([bytes])), publicKey, { ...options, workers: 0 }));

let files = 0;
function fileOf(bytes: Buffer): string {
  const file = join(dir, `journal-${(files += 1)}.ndjson`);
  writeFileSync(file, bytes);
  return file;
}

describe('verifyJournalBytes and verifyJournalFile', () => {
  const cases = Object.entries(mutations).flatMap(([mutation, mutate]) =>
    Object.entries(layouts).map(([layout, toBytes]) => [mutation, layout, toBytes(mutate(base))] as const),
  );

  it.each(cases)('given %s (%s), then the report is the one of verifyJournal over the lines', async (mutation, _, bytes) => {
    const expected = await reference(bytes);
    if ('report' in expected) expect((expected.report as { ok: boolean }).ok).toBe(mutation === 'untouched' || mutation === 'blank line last');
    // Blocks of ~700 bytes hold 2 or 3 lines: every kind of failure lands at and near block boundaries. The file and
    // the chunks feed one reader of blocks: blocks analysed in place and by workers are each checked on one of them
    // (a pool of workers costs a tenth of a second to start; the file through workers is checked below).
    expect(await settle(verifyJournalBytes(chunked(bytes, [5, 333, 1000, 4097]), publicKey, { workers: 2, batchBytes: 700 }))).toEqual(expected);
    expect(await settle(verifyJournalFile(fileOf(bytes), publicKey, { workers: 0, batchBytes: 700 }))).toEqual(expected);
    // The defaults: one block of the whole export.
    expect(await settle(verifyJournalFile(fileOf(bytes), publicKey))).toEqual(expected);
  });

  it('given bytes cut into any chunks and blocks of any size, then the report is the same', async () => {
    const lines = mutations['swapped']!(base);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...Object.values(layouts)),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.constantFrom(0, 1),
        async (toBytes, cuts, batchBytes, workers) => {
          const bytes = toBytes(lines);
          expect(await settle(verifyJournalBytes(chunked(bytes, cuts), publicKey, { workers, batchBytes }))).toEqual(await reference(bytes));
        },
      ),
      { numRuns: 25 },
    );
  });

  it('given bytes that are not UTF-8, then they count and decode as splitLines reads them', async () => {
    const bytes = Buffer.from(base.join('\n') + '\n');
    const at = bytes.indexOf('ünïcode', bytes.indexOf('"position":120,'));
    const broken = Buffer.concat([bytes.subarray(0, at), Buffer.from([0xff, 0xc3, 0x28, 0xe2, 0x82]), bytes.subarray(at + 2)]);
    const expected = await reference(broken);
    expect(expected).toMatchObject({ report: { ok: false, failure: { kind: 'edited', position: 120 } } });
    for (const workers of [0, 2]) {
      expect(await settle(verifyJournalFile(fileOf(broken), publicKey, { workers, batchBytes: 500 }))).toEqual(expected);
    }
    // Each line of a block decodes as the whole block's text does.
    const end = broken.indexOf('\n', at);
    expect(linesOfBlock(broken.subarray(0, end + 1))).toEqual(broken.subarray(0, end).toString('utf8').split('\n'));
  });

  it('given thousands of streams and stream ids UTF-8 cannot carry, then every chain is followed as by verifyJournal', async () => {
    // 3000 streams outgrow the initial slots and index; the lone surrogates stay strings beside the UTF-8 keys.
    const name = (i: number) => (i % 500 === 7 ? `odd-\ud800-${i % 2}` : i % 500 === 8 ? 'odd-\udc00' : `stream-${i % 3000} ✓`);
    const lines = journal(7000, 3000, name);
    // Line 6501's prev no longer links (its first hex digit changed).
    const edited = lines.map((t, i) => (i === 6500 ? t.replace(/"prev":"(.)/, (_, c: string) => `"prev":"${c === '0' ? '1' : '0'}`) : t));
    for (const variant of [lines, edited]) {
      const bytes = Buffer.from(variant.join('\n') + '\n');
      const expected = await reference(bytes);
      expect(await settle(verifyJournalFile(fileOf(bytes), publicKey, { workers: 0 }))).toEqual(expected);
      expect(await settle(verifyJournalFile(fileOf(bytes), publicKey, { workers: 2, batchBytes: 50_000 }))).toEqual(expected);
      if (variant === lines) expect(expected).toMatchObject({ report: { ok: true } });
      else expect(expected).toMatchObject({ report: { ok: false, failure: { kind: 'edited', line: 6501 } } });
    }
  });

  it('given an empty file, a header alone or a bad option, then it answers as verifyJournal', async () => {
    for (const bytes of [Buffer.alloc(0), Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('\n'), Buffer.from(base[0]!), Buffer.from(base[0]! + '\r')]) {
      expect(await settle(verifyJournalFile(fileOf(bytes), publicKey))).toEqual(await reference(bytes));
    }
    await expect(verifyJournalBytes(chunked(Buffer.from('x'), []), publicKey, { batchBytes: 0 })).rejects.toThrow(RangeError);
  });
});
