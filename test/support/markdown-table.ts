/**
 * Rows as an aligned Markdown table, returned as text so a test can put it in its output or an assertion
 * message. (bench/table.ts prints the same form; module boundaries keep test code from importing bench code.)
 */
export function markdownTable(rows: ReadonlyArray<Record<string, string | number>>): string {
  if (rows.length === 0) return '';
  const headers = Object.keys(rows[0]!);
  const cells = rows.map((row) => headers.map((h) => String(row[h] ?? '')));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) => `| ${values.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(headers), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...cells.map(line)].join('\n') + '\n';
}
