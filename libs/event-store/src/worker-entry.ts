import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * How to start the worker thread `name` that sits beside the module at `here` (its `import.meta.url`). From a
 * bundle (dist/apps/oncegate, built by tools/build-app.mjs with an entry per worker): the `.js` file beside it. From
 * TypeScript sources (tsx, vitest): a small script that registers tsx's loader in the thread, then imports the
 * `.ts` file — a worker's `--import` hooks do not apply to its own entry file. tsx is resolved from the caller's
 * package, so any working directory works. The store's writer thread and the journal's verify pool both start
 * theirs this way.
 */
export function workerEntry(here: string, name: string): { entry: URL | string; eval: boolean } {
  if (!/\.[cm]?ts$/.test(new URL(here).pathname)) return { entry: new URL(`./${name}.js`, here), eval: false };
  const tsxApi = pathToFileURL(tsxEsmApi(createRequire(here))).href;
  const worker = new URL(`./${name}.ts`, here).href;
  const script = `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(worker)}); });`;
  return { entry: script, eval: true };
}

/** The ESM build of `tsx/esm/api` (its CommonJS build cannot register from an evaluated worker script). */
function tsxEsmApi(require: NodeRequire): string {
  const manifest = require.resolve('tsx/package.json');
  const { exports } = require(manifest) as { exports: Record<string, { import?: { default?: string } }> };
  const entry = exports['./esm/api']?.import?.default;
  if (entry === undefined) throw new Error(`tsx (${manifest}) has no ESM export of tsx/esm/api`);
  return join(dirname(manifest), entry);
}
