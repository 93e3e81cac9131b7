// The build `npm start` runs before the gateway (run from the project's root): quiet, and skipped when nothing changed.
//
// The apps are up to date when every app under apps/ has its output under dist/apps/ and no source has changed since
// this script last built them (the stamp dist/.start-build, dated when that build began): no file or folder under
// apps/ and libs/ other than a test (*.spec.ts), nor the build's own settings, is newer. Otherwise it runs
// `npm run build`, keeps its output, and prints one line; when the build fails, it prints that output and fails.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = process.cwd();
const STAMP = join(root, 'dist', '.start-build');
const SOURCE_FOLDERS = ['apps', 'libs'];
const BUILD_SETTINGS = ['tools/build-app.mjs', 'tools/ascii-output.mjs', 'tsconfig.base.json', 'nx.json', 'package-lock.json'];

/** The newest modification time (ms) of a folder, its entries and everything below it but tests and installed packages. */
function newestUnder(path) {
  let newest = statSync(path).mtimeMs;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.endsWith('.spec.ts')) continue;
    const child = join(path, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(child) : statSync(child).mtimeMs);
  }
  return newest;
}

/** Why the apps must be built, or undefined when they are up to date. */
function staleness() {
  if (!existsSync(STAMP)) return 'no build by npm start yet';
  const apps = readdirSync(join(root, 'apps')).filter((name) => existsSync(join(root, 'apps', name, 'project.json')));
  const missing = apps.find((name) => !existsSync(join(root, 'dist', 'apps', name)));
  if (missing !== undefined) return `dist/apps/${missing} is missing`;
  const builtAt = statSync(STAMP).mtimeMs;
  const newest = Math.max(
    ...SOURCE_FOLDERS.filter((folder) => existsSync(join(root, folder))).map((folder) => newestUnder(join(root, folder))),
    ...BUILD_SETTINGS.filter((file) => existsSync(join(root, file))).map((file) => statSync(join(root, file)).mtimeMs),
  );
  return newest >= builtAt ? 'sources changed since the last build' : undefined;
}

const reason = staleness();
if (reason !== undefined) {
  const began = new Date();
  // npm sets npm_execpath for the scripts it runs; run directly, the script uses the npm on the PATH.
  const npm = process.env.npm_execpath;
  const [command, args] = npm ? [process.execPath, [npm, 'run', 'build', '--silent']] : ['npm', ['run', 'build', '--silent']];
  const built = spawnSync(command, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (built.status !== 0) {
    process.stderr.write(`${built.stdout ?? ''}${built.stderr ?? ''}${built.error ? `${built.error.message}\n` : ''}`);
    process.stderr.write(`the build failed (npm run build, exit code ${built.status ?? built.signal}); the gateway was not started\n`);
    process.exit(built.status || 1);
  }
  // Dated when the build began: a source saved while it ran is newer, and the next start builds again.
  mkdirSync(join(root, 'dist'), { recursive: true });
  writeFileSync(STAMP, '');
  utimesSync(STAMP, began, began);
  process.stdout.write(`built the apps in ${((Date.now() - began.getTime()) / 1000).toFixed(1)} s (${reason})\n`);
}
