import { execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const SOURCE = fileURLToPath(new URL('../../tools/promparse/', import.meta.url));

/** One sample of an exposition, as the Prometheus project's parser reads it (histograms and summaries: their count). */
export interface ParsedSample {
  readonly family: string;
  readonly type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

let built: Promise<string> | undefined;

/** tools/promparse built once per test process with the Go toolchain (its modules come from the Go module proxy). */
function parser(): Promise<string> {
  built ??= (async () => {
    const binary = join(mkdtempSync(join(tmpdir(), 'oncegate-promparse-')), 'promparse');
    try {
      await promisify(execFile)('go', ['build', '-o', binary, '.'], { cwd: SOURCE, timeout: 300_000 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error('go not found: the exposition is checked with the Prometheus parser, built from tools/promparse with Go (https://go.dev/dl)');
      throw error;
    }
    return binary;
  })();
  return built;
}

/** Parses a Prometheus text exposition with github.com/prometheus/common/expfmt; rejects, with the parser's words, when it does not parse. */
export async function parseExposition(text: string): Promise<ParsedSample[]> {
  const binary = await parser();
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
