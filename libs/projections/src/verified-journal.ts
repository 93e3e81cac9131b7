/**
 * An export is evidence only if it is the journal as written: before a projection or `investigate` reads one, its
 * hash chains and seals are verified with the journal's public key (`oncegate audit verify` does the same check). A
 * broken chain stops the read; reading without the check is possible, and said loudly.
 */
import type { KeyObject } from 'node:crypto';
import { verifyJournalFile } from '@oncegate/journal';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { eventsFromJournalFile } from './event-sources';

/** How an export is trusted: verified with the journal's public key, or read unverified on the analyst's word. */
export type JournalTrust = { readonly publicKey: KeyObject } | { readonly unverified: true };

/** An export that does not verify, or one given without a way to verify it. */
export class JournalVerificationError extends Error {
  readonly kind = 'journal_unverified' as const;
  constructor(message: string) {
    super(message);
    this.name = 'JournalVerificationError';
  }
}

/**
 * Verifies `file` before it is read (events after the last seal — an export taken while the gateway ran — are
 * checked by their hash chains, and `warn` says how many). With `unverified`, nothing is checked and `warn` says so.
 */
export async function verifyExport(file: string, trust: JournalTrust | undefined, warn: (text: string) => void): Promise<void> {
  if (trust !== undefined && 'unverified' in trust) {
    warn(`WARNING: ${file} is read WITHOUT verifying its hash chains and seals (--unverified): an edited, inserted, removed or reordered event would go unnoticed, and nothing read from it is evidence\n`);
    return;
  }
  if (trust === undefined) {
    throw new JournalVerificationError(
      `${file}: an export is verified before it is read: give --public-key <journal-seal.pub.pem> (the journal's public key, from the data folder's keys), or --unverified to read it unchecked`,
    );
  }
  const report = await verifyJournalFile(file, trust.publicKey, { allowUnsealedTail: true });
  if (!report.ok) {
    const failure = report.failure!;
    throw new JournalVerificationError(
      `${file} does not verify (${failure.kind}): ${failure.detail}; first bad event: stream ${failure.streamId ?? '?'}, global position ${failure.position ?? '?'} (line ${failure.line}). Nothing was read from it.`,
    );
  }
  if (report.chainOnlyEvents > 0) warn(`${file}: verified; ${report.chainOnlyEvents} of its ${report.events} events are checked by their hash chains only (after its last seal)\n`);
}

/** The streams of an export, as `investigate` reads them from a store: every event of the streams it names, in order. */
export async function journalFileStreams(file: string, streamPrefixes: readonly string[]): Promise<Pick<EventStore, 'readStream'>> {
  const streams = new Map<string, RecordedEvent[]>();
  for await (const event of eventsFromJournalFile(file, { filter: { streamPrefixes: [...streamPrefixes] } })) {
    const stream = streams.get(event.streamId) ?? [];
    stream.push(event);
    streams.set(event.streamId, stream);
  }
  return { readStream: async (streamId: string) => streams.get(streamId) ?? [] };
}
