import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventHash } from '@oncegate/event-store/chain';
import { formatEventLine, type JournalEvent } from './export-format';
import { SEAL_STREAM, signSeal, type JournalSealedData } from './seal';
import { exportLines, linesOf } from './testing/export-lines';
import { JournalBuilder } from './testing/journal-builder';
import { verifyJournal } from './verify';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const other = generateKeyPairSync('ed25519');

/** Two sealed ranges over three streams, with an event committed between the second range and its seal. */
function sampleJournal(key = privateKey, pub = publicKey): JournalEvent[] {
  const events: JournalEvent[] = [];
  const journal = new JournalBuilder(key, pub, (e) => events.push(e));
  journal.append('execution-a', 'ExecutionAccepted', { tool: 'deploy', note: 'héllo ✓ 日本' });
  journal.append('execution-b', 'ExecutionAccepted', { tool: 'restart' });
  journal.append('execution-a', 'Dispatched', { attempt: 1 });
  journal.seal(); // positions 1..3 sealed by the event at 4
  journal.append('execution-b', 'Dispatched', { attempt: 1 });
  journal.append('execution-c', 'ExecutionAccepted', { tool: 'scale' }, { actor: 'agent:x' });
  journal.seal([() => journal.append('execution-a', 'OutcomeObserved', { status: 200 })]); // range 4..6, event at 7, seal at 8
  journal.append('execution-c', 'Dispatched', { attempt: 1 });
  journal.seal(); // range 7..9, seal at 10
  return events;
}

const verify = (lines: string[], options?: { allowUnsealedTail?: boolean }, key = publicKey) =>
  verifyJournal(linesOf(lines), key, options);

/** Line number of a position in an export that starts after `from`. */
const lineOfPosition = (position: number, from = 0) => position - from + 1;

function rewrite(lines: string[], position: number, change: (event: Record<string, unknown>) => void, from = 0): string[] {
  const copy = [...lines];
  const index = lineOfPosition(position, from) - 1;
  const event = JSON.parse(copy[index]!) as Record<string, unknown>;
  change(event);
  copy[index] = JSON.stringify(event);
  return copy;
}

describe('verifyJournal', () => {
  it('given an untouched export with seals and an event committed between a range and its seal, then it verifies', async () => {
    const report = await verify(exportLines(sampleJournal()));
    expect(report).toMatchObject({ ok: true, events: 10, seals: 3, firstPosition: 1, lastPosition: 10, sealedThrough: 9 });
    expect(report.failure).toBeUndefined();
    expect(report.chainOnlyEvents).toBe(1); // the last seal event itself
  });

  it('given an event whose data was changed, then it reports edited at that event', async () => {
    const lines = rewrite(exportLines(sampleJournal()), 6, (e) => (e['data'] = { tool: 'delete-everything' }));
    const report = await verify(lines);
    expect(report.failure).toMatchObject({ kind: 'edited', streamId: 'execution-c', revision: 0, position: 6, line: 7 });
  });

  it('given an event edited and re-hashed with no later event in its stream, then the seal over it reports the digest mismatch', async () => {
    const rehash = (position: number) =>
      rewrite(exportLines(sampleJournal()), position, (e) => {
        e['metadata'] = { actor: 'agent:y' };
        e['hash'] = eventHash(e['prev'] as string, e as unknown as JournalEvent);
      });
    // Position 6 is in the range (3, 6] sealed by the event at 8.
    expect((await verify(rehash(6))).failure).toMatchObject({ kind: 'edited', streamId: SEAL_STREAM, position: 8, line: 9, detail: expect.stringContaining('digest') });
    // Position 7 was committed between that range and its seal: the next seal, (6, 9] at 10, covers it.
    expect((await verify(rehash(7))).failure).toMatchObject({ kind: 'edited', position: 10, line: 11 });
  });

  it('given an event edited and re-hashed with a later event in its stream, then the chain reports it at that later event', async () => {
    const lines = rewrite(exportLines(sampleJournal()), 1, (e) => {
      e['data'] = { tool: 'delete-everything' };
      e['hash'] = eventHash(e['prev'] as string, e as unknown as JournalEvent);
    });
    // execution-a continues at 3, before the seal at 4 is read.
    expect((await verify(lines)).failure).toMatchObject({ kind: 'edited', streamId: 'execution-a', revision: 1, position: 3, line: 4 });
  });

  it('given a deleted event, then it reports missing at the event after the gap', async () => {
    const lines = exportLines(sampleJournal());
    lines.splice(lineOfPosition(3) - 1, 1);
    const report = await verify(lines);
    expect(report.failure).toMatchObject({ kind: 'missing', position: 4, line: 4 });
    expect(report.failure?.detail).toContain('position 3 is absent');
  });

  it('given a duplicated event line, then it reports inserted at the extra line', async () => {
    const lines = exportLines(sampleJournal());
    lines.splice(lineOfPosition(6) - 1, 0, lines[lineOfPosition(2) - 1]!);
    expect((await verify(lines)).failure).toMatchObject({ kind: 'inserted', position: 2, line: 7 });
  });

  it('given two events swapped, then it reports reordered at the first out-of-place line', async () => {
    const lines = exportLines(sampleJournal());
    [lines[2], lines[5]] = [lines[5]!, lines[2]!];
    expect((await verify(lines)).failure).toMatchObject({ kind: 'reordered', position: 5, line: 3 });
  });

  it('given a line whose position field was changed, then it reports edited at that line', async () => {
    const lines = rewrite(exportLines(sampleJournal()), 4, (e) => (e['position'] = 9));
    expect((await verify(lines)).failure).toMatchObject({ kind: 'edited', position: 9, line: 5 });
  });

  it('given the export truncated before its last seal, then it reports the unsealed tail, or the truncation when a tail is allowed', async () => {
    const lines = exportLines(sampleJournal()).slice(0, lineOfPosition(9));
    expect((await verify(lines)).failure).toMatchObject({ kind: 'unsealed_tail', position: 9, line: 10 });
    expect((await verify(lines, { allowUnsealedTail: true })).failure).toMatchObject({ kind: 'missing', position: null, line: 11 });
  });

  it('given events after the last seal, then they are an unsealed tail unless allowed', async () => {
    const events = sampleJournal();
    const tail: JournalEvent = { ...events[8]!, position: 11, revision: 2, prev: events[8]!.hash, id: 'evt-11' };
    const linked = { ...tail, hash: eventHash(tail.prev, tail) };
    const lines = exportLines([...events, linked]);
    expect((await verify(lines)).failure).toMatchObject({ kind: 'unsealed_tail', streamId: 'execution-c', position: 11, line: 12 });
    expect(await verify(lines, { allowUnsealedTail: true })).toMatchObject({ ok: true, chainOnlyEvents: 2 });
  });

  it('given a journal with no seal, then every event is unsealed', async () => {
    const lines = exportLines(sampleJournal().slice(0, 3));
    expect((await verify(lines)).failure).toMatchObject({ kind: 'unsealed_tail', position: 1, line: 2 });
    expect((await verify(lines)).failure?.detail).toContain('no seal');
  });

  it('given seals signed by another key, then it reports bad_signature at the first seal', async () => {
    const lines = exportLines(sampleJournal(other.privateKey, other.publicKey));
    const report = await verify(lines);
    expect(report.failure).toMatchObject({ kind: 'bad_signature', streamId: SEAL_STREAM, position: 4, line: 5 });
    expect(report.failure?.detail).toContain('names key');
  });

  it('given a seal body altered and its event re-hashed, then the signature no longer verifies', async () => {
    const lines = rewrite(exportLines(sampleJournal()), 4, (e) => {
      const data = e['data'] as JournalSealedData;
      e['data'] = { ...data, toPosition: 2, eventCount: 2 };
      e['hash'] = eventHash(e['prev'] as string, e as unknown as JournalEvent);
    });
    expect((await verify(lines)).failure).toMatchObject({ kind: 'bad_signature', position: 4, line: 5 });
  });

  it('given a seal re-signed with the key but over a digest of other events, then it reports the digest mismatch', async () => {
    const lines = rewrite(exportLines(sampleJournal()), 4, (e) => {
      const data = e['data'] as JournalSealedData;
      e['data'] = signSeal({ ...data, digest: 'f'.repeat(64) }, privateKey);
      e['hash'] = eventHash(e['prev'] as string, e as unknown as JournalEvent);
    });
    // Re-hashing the seal breaks its successor in the seal stream (position 8) only after the digest check at 4.
    expect((await verify(lines)).failure).toMatchObject({ kind: 'edited', position: 4, detail: expect.stringContaining('digest') });
  });

  it('given an export that starts mid-journal, then the first seal anchors and later seals are recomputed', async () => {
    const events = sampleJournal();
    // Seal 1 covers (3, 6]: an export after 3 can recompute it, so only the last seal event is chain-only.
    const report = await verify(exportLines(events.slice(3), { fromPosition: 3 }));
    expect(report).toMatchObject({ ok: true, events: 7, seals: 3, sealedThrough: 9, firstPosition: 4, chainOnlyEvents: 1 });
    // An export after 4 cannot: 5 and 6 are chain-checked only, seal 1 anchors seal 2 over (6, 9].
    const later = await verify(exportLines(events.slice(4), { fromPosition: 4 }));
    expect(later).toMatchObject({ ok: true, seals: 2, sealedThrough: 9, chainOnlyEvents: 3 });
    // Tampering inside the anchored range is still caught by the chain where a stream continues.
    const edited = rewrite(exportLines(events.slice(4), { fromPosition: 4 }), 6, (e) => (e['type'] = 'Forged'), 4);
    expect((await verify(edited)).failure).toMatchObject({ kind: 'edited', position: 6, line: 3 });
  });

  it('given a full export whose stream does not start at revision 0, then it reports missing', async () => {
    const events = sampleJournal();
    const lines = exportLines(events.slice(2), { fromPosition: 0 });
    expect((await verify(lines)).failure).toMatchObject({ kind: 'missing', line: 2, position: 3 });
  });

  it('given malformed lines, then it reports malformed with the line number', async () => {
    const lines = exportLines(sampleJournal());
    expect((await verify([])).failure).toMatchObject({ kind: 'malformed', line: 1 });
    expect((await verify(['{"format":"other"}', ...lines.slice(1)])).failure).toMatchObject({ kind: 'malformed', line: 1 });
    const broken = [...lines];
    broken[3] = broken[3]!.slice(0, 40);
    expect((await verify(broken)).failure).toMatchObject({ kind: 'malformed', line: 4, detail: expect.stringContaining('not JSON') });
    const extra = rewrite(lines, 2, (e) => (e['note'] = 'unhashed'));
    expect((await verify(extra)).failure).toMatchObject({ kind: 'malformed', line: 3, detail: expect.stringContaining('"note"') });
    const blank = [...lines.slice(0, 3), '', ...lines.slice(3)];
    expect((await verify(blank)).failure).toMatchObject({ kind: 'malformed', line: 4 });
    expect((await verify([...lines, ''])).ok).toBe(true);
  });

  it('given a line as the store exported it, then formatEventLine and the verifier agree byte for byte', async () => {
    const events = sampleJournal();
    expect(exportLines(events)[1]).toBe(formatEventLine(events[0]!));
  });
});
