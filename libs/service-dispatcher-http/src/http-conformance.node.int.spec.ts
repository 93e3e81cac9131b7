import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const entry = fileURLToPath(new URL('./http-conformance.node-test.ts', import.meta.url));
const broken = fileURLToPath(new URL('./testing/double-effect.node-test.ts', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs one file under `node --test` (TAP), whether it passes or not. */
async function nodeTest(file: string): Promise<string> {
  try {
    return (await run(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', file], { cwd: root, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (error) {
    const { stdout, stderr, code } = error as { stdout?: string; stderr?: string; code?: number | string };
    // node --test exits 1 when a case failed; anything else is the run itself failing.
    if (code === 1 && stdout) return stdout;
    throw new Error(`node --test ${file} failed (${String(code)}):\n${(stdout ?? '').slice(-6_000)}\n${(stderr ?? '').slice(-3_000)}`);
  }
}

const total = (report: string, name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(report)?.[1] ?? NaN);

/** The suite is not vitest's: the same cases pass under Node's own test runner, reported in its TAP output. */
describe('the dispatcher conformance suite under node --test (the HTTP channel)', () => {
  it('given the HTTP channel and node:test, when the suite runs, then every case of every class passes and the two credential cases run', async () => {
    const stdout = await nodeTest(entry);
    const summary = { pass: total(stdout, 'pass'), fail: total(stdout, 'fail'), skipped: total(stdout, 'skipped') };
    // 4 classes × 6 cases, the echo case and the canary case.
    expect(summary, stdout.slice(-4_000)).toEqual({ pass: 26, fail: 0, skipped: 0 });
    expect(stdout).toMatch(/^\s*ok \d+ - given every case above, then neither the credential nor any prefix of it is in the journal/m);
  }, 300_000);

  it('given a channel whose target took effect twice for one execution, when the suite runs, then it fails saying so', async () => {
    const stdout = await nodeTest(broken);
    expect(total(stdout, 'fail')).toBeGreaterThan(0);
    expect(stdout).toMatch(/2 effects at the target for one execution \(ex_[0-9A-Z]{26}\), expected 1/);
  }, 300_000);
});
