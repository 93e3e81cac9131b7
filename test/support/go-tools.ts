import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const built = new Map<string, Promise<string>>();

/**
 * A Go program of tools/ (`promparse`, `otelcol`) built once per test process with the Go toolchain, its modules from
 * the Go module proxy (.ci/run builds each once, so this finds them in Go's build cache). `why` says what the tests
 * need it for, in the error when Go is missing.
 */
export function goTool(name: 'promparse' | 'otelcol', why: string): Promise<string> {
  let binary = built.get(name);
  if (binary === undefined) {
    binary = (async () => {
      const output = join(mkdtempSync(join(tmpdir(), `oncegate-${name}-`)), name);
      try {
        await promisify(execFile)('go', ['build', '-o', output, '.'], { cwd: fileURLToPath(new URL(`../../tools/${name}/`, import.meta.url)), timeout: 600_000 });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`go not found: ${why}, built from tools/${name} with Go (https://go.dev/dl)`);
        throw error;
      }
      return output;
    })();
    built.set(name, binary);
  }
  return binary;
}
