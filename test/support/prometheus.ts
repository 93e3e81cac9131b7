import { spawn } from 'node:child_process';
import { goTool } from './go-tools';

/** One sample of an exposition, as the Prometheus project's parser reads it (histograms and summaries: their count). */
export interface ParsedSample {
  readonly family: string;
  readonly type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses a Prometheus text exposition with github.com/prometheus/common/expfmt; rejects, with the parser's words, when it does not parse. */
export async function parseExposition(text: string): Promise<ParsedSample[]> {
  const binary = await goTool('promparse', 'the exposition is checked with the Prometheus parser');
  const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += String(chunk)));
  child.stderr.on('data', (chunk) => (err += String(chunk)));
  child.stdin.end(text);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(err.trim() || `promparse exited with ${code}`);
  return JSON.parse(out) as ParsedSample[];
}
