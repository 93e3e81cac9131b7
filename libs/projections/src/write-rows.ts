/**
 * A projection's table as a file: `.json` (an array of objects) or `.csv` (RFC 4180: CRLF line ends, a header
 * row, fields quoted when they hold a comma, a quote or a line break, quotes doubled).
 */
import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { ProjectionCell, ProjectionRow } from './projection';

export type RowsFormat = 'json' | 'csv';

export class UnsupportedRowsFormatError extends Error {
  readonly kind = 'rows_format_unsupported' as const;
  constructor(readonly file: string) {
    super(`cannot tell the output format of ${file}: name it .json or .csv`);
    this.name = 'UnsupportedRowsFormatError';
  }
}

export function rowsFormatOf(file: string): RowsFormat {
  const extension = extname(file).toLowerCase();
  if (extension === '.json') return 'json';
  if (extension === '.csv') return 'csv';
  throw new UnsupportedRowsFormatError(file);
}

/** Every column in the order it first appears, so rows with different keys still share one header. */
export function columnsOf(rows: readonly ProjectionRow[]): string[] {
  const columns = new Set<string>();
  for (const row of rows) for (const key of Object.keys(row)) columns.add(key);
  return [...columns];
}

export function toCsv(rows: readonly ProjectionRow[]): string {
  const columns = columnsOf(rows);
  if (columns.length === 0) return '';
  const lines = [columns.map(csvField).join(',')];
  for (const row of rows) lines.push(columns.map((column) => csvField(row[column] ?? null)).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

export function formatRows(rows: readonly ProjectionRow[], format: RowsFormat): string {
  return format === 'csv' ? toCsv(rows) : `${JSON.stringify(rows, null, 2)}\n`;
}

export async function writeRows(rows: readonly ProjectionRow[], outFile: string): Promise<void> {
  await writeFile(outFile, formatRows(rows, rowsFormatOf(outFile)), 'utf8');
}

function csvField(value: ProjectionCell): string {
  if (value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
