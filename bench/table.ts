/** Prints rows as an aligned Markdown table, so the output pastes into docs unchanged. */
export function printTable(title: string, rows: ReadonlyArray<Record<string, string | number>>): void {
  if (rows.length === 0) return;
  const headers = Object.keys(rows[0]!);
  const cells = rows.map((row) => headers.map((h) => String(row[h] ?? '')));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) => `| ${values.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  process.stdout.write(`\n### ${title}\n\n`);
  process.stdout.write(line(headers) + '\n');
  process.stdout.write(`| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |\n`);
  for (const row of cells) process.stdout.write(line(row) + '\n');
}

/** Percentile of a sample, nearest-rank. */
export function percentile(sortedAscending: readonly number[], p: number): number {
  if (sortedAscending.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sortedAscending.length);
  return sortedAscending[Math.min(sortedAscending.length - 1, Math.max(0, rank - 1))]!;
}

/** Arithmetic mean of a sample; NaN when it is empty. */
export function mean(values: readonly number[]): number {
  return values.length === 0 ? NaN : values.reduce((sum, value) => sum + value, 0) / values.length;
}

export function ms(value: number): string {
  return value.toFixed(value < 1 ? 3 : 2);
}

export function rate(count: number, seconds: number): string {
  return Math.round(count / seconds).toLocaleString('en-US');
}

export function machineLine(): string {
  // Imported lazily so that table helpers stay usable in any context.
  return `node ${process.version}, ${process.platform}/${process.arch}`;
}

/** One line of a bench's report on standard output. */
export const log = (line: string) => process.stdout.write(`${line}\n`);
