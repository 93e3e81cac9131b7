/**
 * Where a projection's events come from: the live event store (read in pages) or an NDJSON journal export
 * (`oncegate journal export`), read line by line so a file of any size is never held in memory.
 */
import { createReadStream } from 'node:fs';
import { splitLines } from '@oncegate/journal';
import { readAllFrom, type EventStore, type RecordedEvent } from '@oncegate/event-store';
import { matchesFilter, type ProjectionFilter } from './projection';

export const JOURNAL_EXPORT_FORMAT = 'oncegate-journal/1';

export interface EventSourceOptions {
  /** Only events strictly after this global position. Default 0: from the start. */
  readonly after?: number;
  /** Default: every event. */
  readonly filter?: ProjectionFilter;
}

export interface StoreEventSourceOptions extends EventSourceOptions {
  /** Events read per page. Default 1000. */
  readonly pageSize?: number;
}

/** A re-openable source of events in global order; the runner opens it after its checkpoint. */
export interface ProjectionSource {
  /** For messages, e.g. `journal file /tmp/export.ndjson`. */
  readonly description: string;
  events(options?: EventSourceOptions): AsyncIterable<RecordedEvent>;
  /** The last global position, when it is known without reading everything (progress total). */
  head(): Promise<number | undefined>;
}

/** A journal export that cannot be read: names the file, the line and what is wrong. */
export class JournalFileError extends Error {
  readonly kind = 'journal_file_invalid' as const;
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string,
  ) {
    super(`${file}:${line}: ${reason}`);
    this.name = 'JournalFileError';
  }
}

export async function* eventsFromStore(
  store: EventStore,
  options: StoreEventSourceOptions = {},
): AsyncGenerator<RecordedEvent> {
  yield* readAllFrom(store, options);
}

export async function* eventsFromJournalFile(
  file: string,
  options: EventSourceOptions = {},
): AsyncGenerator<RecordedEvent> {
  const after = options.after ?? 0;
  const input = createReadStream(file);
  const lines = splitLines(input);
  let lineNumber = 0;
  let sawHeader = false;
  try {
    for await (const line of lines) {
      lineNumber += 1;
      if (line.trim().length === 0) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new JournalFileError(file, lineNumber, 'not a JSON line');
      }
      if (!sawHeader) {
        const format = isObject(parsed) ? parsed['format'] : undefined;
        if (format !== JOURNAL_EXPORT_FORMAT) {
          throw new JournalFileError(
            file,
            lineNumber,
            `expected a header line {"format":"${JOURNAL_EXPORT_FORMAT}",...}, found ${describeFormat(format)}`,
          );
        }
        sawHeader = true;
        continue;
      }
      // Lines of another kind (e.g. seals) carry no stream; they are evidence for `audit verify`, not events.
      if (!isObject(parsed) || !('streamId' in parsed)) continue;
      const event = asRecordedEvent(parsed);
      if (event === undefined) {
        throw new JournalFileError(file, lineNumber, 'an event line needs streamId, revision, position, type and data');
      }
      if (event.position <= after) continue;
      if (matchesFilter(options.filter, event)) yield event;
    }
    if (!sawHeader) throw new JournalFileError(file, 0, 'empty file: no journal export header');
  } finally {
    input.destroy();
  }
}

export function storeSource(store: EventStore, pageSize?: number): ProjectionSource {
  return {
    description: 'event store',
    events: (options = {}) => eventsFromStore(store, { ...options, ...(pageSize === undefined ? {} : { pageSize }) }),
    head: () => store.headPosition(),
  };
}

export function journalFileSource(file: string): ProjectionSource {
  return {
    description: `journal file ${file}`,
    events: (options = {}) => eventsFromJournalFile(file, options),
    // Knowing the last position would mean reading the whole file first.
    head: async () => undefined,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeFormat(format: unknown): string {
  return format === undefined ? 'no format' : `format ${JSON.stringify(format)}`;
}

function asRecordedEvent(value: Record<string, unknown>): RecordedEvent | undefined {
  const { streamId, revision, position, type } = value;
  if (typeof streamId !== 'string' || typeof type !== 'string') return undefined;
  if (!Number.isSafeInteger(revision) || !Number.isSafeInteger(position) || !('data' in value)) return undefined;
  const metadata = isObject(value['metadata']) ? value['metadata'] : {};
  return { ...(value as unknown as RecordedEvent), metadata };
}
