import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

/** `bundledScript` from a fresh instance of its module: what another test file's process would find. */
async function freshBundledScript(): Promise<(entry: string, folder: string) => string> {
  vi.resetModules();
  return (await import('./worker-entry')).bundledScript;
}

describe('a test process bundled to plain JavaScript', () => {
  let dir: string;
  let entry: string;
  let part: string;
  let cache: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-bundled-'));
    entry = join(dir, 'main.ts');
    part = join(dir, 'part.ts');
    cache = join(dir, 'cache');
    writeFileSync(entry, "import { word } from './part';\nconst said: string = word();\nprocess.stdout.write(said);\n");
    writeFileSync(part, "export const word = (): string => 'first';\n");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('given a TypeScript entry and its import, when bundled, then plain Node runs it; another process asking gets the same file, not made again', async () => {
    const script = (await freshBundledScript())(entry, cache);
    expect(script.endsWith('.mjs')).toBe(true);
    expect(execFileSync(process.execPath, [script], { encoding: 'utf8' })).toBe('first');
    const madeAt = statSync(script).mtimeMs;

    expect((await freshBundledScript())(entry, cache)).toBe(script);
    expect(statSync(script).mtimeMs).toBe(madeAt);
    expect(readdirSync(cache).sort()).toEqual([script.slice(cache.length + 1), 'manifest.json'].sort());
  });

  it('given a file the bundle was made of changed since, when asked for it, then it is made again from the changed file', async () => {
    const before = (await freshBundledScript())(entry, cache);
    writeFileSync(part, "export const word = (): string => 'second';\n");

    const after = (await freshBundledScript())(entry, cache);
    expect(after).not.toBe(before);
    expect(execFileSync(process.execPath, [after], { encoding: 'utf8' })).toBe('second');
  });

  it('given a file the bundle was made of gone, when asked for it, then it is made again without it', async () => {
    (await freshBundledScript())(entry, cache);
    rmSync(part);
    writeFileSync(entry, "process.stdout.write('alone');\n");

    const after = (await freshBundledScript())(entry, cache);
    expect(execFileSync(process.execPath, [after], { encoding: 'utf8' })).toBe('alone');
  });
});
