import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const LAUNCHER = join(ROOT, 'bin/oncegate.mjs');

function runLauncher(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [LAUNCHER, ...args], { cwd }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

describe('bin/oncegate.mjs', () => {
  it('given the examples, when the real launcher checks them from another directory, then it exits 0 with the summary', async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), 'oncegate-cli-'));
    try {
      const result = await runLauncher(['contracts', 'check', join(ROOT, 'examples/tools.yaml')], elsewhere);
      expect(result.stderr).toBe('');
      expect(result.stdout).toBe(`${join(ROOT, 'examples/tools.yaml')}: 6 tools OK (read_only 1, idempotent_write 1, conditional_write 1, irreversible 2, remote_command 1)\n`);
      expect(result.code).toBe(0);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('given the typo fixture, when the real launcher checks it, then it exits 1 and prints the issues', async () => {
    const result = await runLauncher(['contracts', 'check', 'libs/contracts/fixtures/typos.yaml'], ROOT);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      "libs/contracts/fixtures/typos.yaml:16:5 tools[0].corelation_window: unknown field 'corelation_window' — did you mean 'correlation_window'?\n",
    );
    expect(result.stderr).toBe('15 problems in 1 file\n');
  });

  it('given an unknown command, when the real launcher runs, then it exits 2', async () => {
    const result = await runLauncher(['frobnicate'], ROOT);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^oncegate: unknown command 'frobnicate'/);
  });
});
