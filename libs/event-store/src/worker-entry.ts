import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * How to start the worker thread `name` that sits beside the module at `here` (its `import.meta.url`). From a
 * bundle (dist/apps/oncegate, built by tools/build-app.mjs with an entry per worker): the `.js` file beside it. From
 * TypeScript sources (vitest, tsx): the `.ts` file bundled to one ES module by esbuild, as the build does, once per
 * process and worker, and started from a `data:` URL, so a thread starts on plain JavaScript. (Each thread used to
 * register tsx's loader and compile its modules itself: about twice the start of a thread on JavaScript, paid by
 * every verify pool and every SQLite store's writer thread in the tests.) esbuild is resolved from the caller's
 * package, so any working directory works. The store's writer thread and the journal's verify pool both start theirs
 * this way.
 */
export function workerEntry(here: string, name: string): { entry: URL | string; eval: boolean } {
  if (!/\.[cm]?ts$/.test(new URL(here).pathname)) return { entry: new URL(`./${name}.js`, here), eval: false };
  const source = fileURLToPath(new URL(`./${name}.ts`, here));
  let bundled = bundledWorkers.get(source);
  if (bundled === undefined) {
    bundled = bundleWorker(createRequire(here), source);
    bundledWorkers.set(source, bundled);
  }
  return { entry: bundled, eval: false };
}

/** The workers bundled from sources in this process, by source file. */
const bundledWorkers = new Map<string, URL>();

/**
 * `source` and everything it imports as one ES module in a `data:` URL: the workspace's paths as the nearest
 * tsconfig.json maps them (as the build does), and the packages bundled too, since a `data:` URL resolves no package.
 */
function bundleWorker(require: NodeRequire, source: string): URL {
  const { buildSync } = require('esbuild') as typeof import('esbuild');
  const { outputFiles } = buildSync({ entryPoints: [source], write: false, bundle: true, platform: 'node', format: 'esm', target: 'node24', logLevel: 'error' });
  const code = outputFiles[0]!.contents;
  return new URL(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`);
}
