import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const START_BUILD = fileURLToPath(new URL('./start-build.mjs', import.meta.url));

/**
 * A project in miniature: one app and one library, and an `npm run build` that counts its runs, writes the app's
 * output, and fails while fail.flag exists.
 */
function miniatureProject(): string {
  const root = mkdtempSync(join(tmpdir(), 'oncegate-start-build-'));
  const file = (path: string, text: string) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  file('package.json', JSON.stringify({ name: 'miniature', private: true, scripts: { build: 'node build.mjs' } }));
  file(
    'build.mjs',
    [
      "import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';",
      "appendFileSync('runs.txt', 'build\\n');",
      "console.log('> nx run app:build (fifty lines of it)');",
      "if (existsSync('fail.flag')) { console.error('boom: src/main.ts:1:1 syntax error'); process.exit(3); }",
      "mkdirSync('dist/apps/app', { recursive: true });",
      "writeFileSync('dist/apps/app/main.js', '');",
    ].join('\n'),
  );
  file('apps/app/project.json', '{}');
  file('apps/app/src/main.ts', 'export {};\n');
  file('libs/lib/src/lib.ts', 'export const x = 1;\n');
  file('libs/lib/src/lib.unit.spec.ts', 'export {};\n');
  return root;
}

/** Moves a file's modification time a little into the future: a save after the last build. */
function saved(root: string, path: string): void {
  const later = new Date(Date.now() + 2_000);
  utimesSync(join(root, path), later, later);
}

describe('the build npm start runs', () => {
  let root: string;
  beforeEach(() => {
    root = miniatureProject();
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const startBuild = () => spawnSync(process.execPath, [START_BUILD], { cwd: root, encoding: 'utf8', env: process.env });
  const runs = () => readFileSync(join(root, 'runs.txt'), 'utf8').split('\n').filter(Boolean).length;

  it('given no build yet, when npm start builds, then the build runs and all it prints is one line', () => {
    const first = startBuild();
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^built the apps in \d+\.\d s \(no build by npm start yet\)\n$/);
    expect(first.stderr).toBe('');
    expect(runs()).toBe(1);
  });

  it('given nothing changed since its last build, when npm start runs again, then it neither builds nor prints anything', () => {
    startBuild();
    saved(root, 'libs/lib/src/lib.unit.spec.ts');
    const again = startBuild();
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout + again.stderr).toBe('');
    expect(runs()).toBe(1);
  });

  it("given a source saved since, or an app's output gone, when npm start runs, then it builds again and says why", () => {
    startBuild();
    saved(root, 'libs/lib/src/lib.ts');
    const changed = startBuild();
    expect(changed.stdout).toMatch(/\(sources changed since the last build\)\n$/);
    expect(runs()).toBe(2);

    rmSync(join(root, 'dist/apps/app'), { recursive: true });
    const missing = startBuild();
    expect(missing.stdout).toMatch(/\(dist\/apps\/app is missing\)\n$/);
    expect(runs()).toBe(3);
  });

  it('given a build that fails, when npm start runs, then it shows the build output and fails, and the next start builds again', () => {
    writeFileSync(join(root, 'fail.flag'), '');
    const failed = startBuild();
    expect(failed.status).toBe(3);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toContain('boom: src/main.ts:1:1 syntax error');
    expect(failed.stderr).toContain('fifty lines of it');
    expect(failed.stderr).toMatch(/the build failed \(npm run build, exit code 3\); the gateway was not started/);
    expect(existsSync(join(root, 'dist/.start-build'))).toBe(false);

    rmSync(join(root, 'fail.flag'));
    expect(startBuild().status).toBe(0);
    expect(runs()).toBe(2);
  });
});
