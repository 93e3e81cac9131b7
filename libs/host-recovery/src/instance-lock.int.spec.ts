import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InstanceLock, probeInstanceLock } from './instance-lock';

const MODULE = fileURLToPath(new URL('./instance-lock.ts', import.meta.url));

/** Another OS process that takes the instance lock and keeps running until killed. */
async function processHoldingLock(dir: string, instance: string) {
  const code = `import(${JSON.stringify(MODULE)}).then((m) => { m.InstanceLock.hold(${JSON.stringify(dir)}, ${JSON.stringify(instance)}); console.log('held'); setInterval(() => {}, 1000); });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => (line === 'held' ? resolve() : reject(new Error(line))));
    child.once('exit', (status) => reject(new Error(`the lock holder exited with ${status}`)));
  });
  return {
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('instance lock (a file in the data folder, another OS process)', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-instances-'));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('given a process holding its instance lock, when probed, then it is alive; after kill -9 it is gone and its file removed', async () => {
    const holder = await processHoldingLock(dir, '4711-0badcafe');
    expect(probeInstanceLock(dir, '4711-0badcafe')).toBe('alive');
    await holder.kill();
    expect(probeInstanceLock(dir, '4711-0badcafe')).toBe('gone');
    expect(existsSync(join(dir, '4711-0badcafe.lock'))).toBe(false);
  });

  it('given an instance that released its lock, or one never seen here, when probed, then nothing is known from locks', () => {
    InstanceLock.hold(dir, '100-00000001').release();
    expect(probeInstanceLock(dir, '100-00000001')).toBe('unknown');
    expect(probeInstanceLock(dir, '200-00000002')).toBe('unknown');
    expect(probeInstanceLock(dir, '../escape')).toBe('unknown');
  });
});
