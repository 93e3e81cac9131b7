import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * vitest global set-up: compiles the apps once before any test runs, so the end-to-end tests start the gateway
 * as users run it (`bin/oncegate.mjs` → dist/apps/oncegate/main.js) from the sources under test.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('../', import.meta.url));
  const nx = fileURLToPath(new URL('../node_modules/.bin/nx', import.meta.url));
  const built = spawnSync(process.execPath, [nx, 'run-many', '-t', 'build', '--output-style=static'], {
    cwd: root,
    env: { ...process.env, NX_DAEMON: 'false' },
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`npm run build failed before the tests:\n${built.stdout}${built.stderr}`);
}
