import { formatEventLine, formatHeader, type JournalEvent } from '../export-format';

/** The lines of an export of `events` (header first), as a reader would split the file. */
export function exportLines(
  events: readonly JournalEvent[],
  header: { fromPosition?: number; toPosition?: number; publicKeyId?: string | null } = {},
): string[] {
  const fromPosition = header.fromPosition ?? (events.length === 0 ? 0 : events[0]!.position - 1);
  const toPosition = header.toPosition ?? (events.length === 0 ? fromPosition : events[events.length - 1]!.position);
  return [
    formatHeader({ exportedAt: '2026-07-22T10:00:00.000Z', fromPosition, toPosition, publicKeyId: header.publicKeyId ?? null }),
    ...events.map(formatEventLine),
  ];
}

export async function* linesOf(lines: readonly string[]): AsyncGenerator<string> {
  yield* lines;
}
