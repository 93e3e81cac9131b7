// Compiles one app to JavaScript: `node tools/build-app.mjs <outdir> <name>=<entry.ts> [<name>=<entry.ts> ...]`.
// Each app's `build` target (its project.json) names its entry points; `npm run build` runs them all.
//
// esbuild bundles the workspace's own code (the @oncegate/* libraries resolve through tsconfig paths) into one
// ES module per entry and leaves every npm package external, so the output runs on plain Node with the
// project's node_modules and no TypeScript loader. Decorators compile as the sources declare them
// (experimentalDecorators); the services name their injection tokens, so no emitted design metadata is needed.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const [outdir, ...entries] = process.argv.slice(2);
if (outdir === undefined || entries.length === 0 || entries.some((entry) => !/^[\w-]+=.+\.ts$/.test(entry))) {
  process.stderr.write('usage: node tools/build-app.mjs <outdir> <name>=<entry.ts> [<name>=<entry.ts> ...]\n');
  process.exit(2);
}

const target = join(root, outdir);
rmSync(target, { recursive: true, force: true });
const started = performance.now();
await build({
  absWorkingDir: root,
  entryPoints: Object.fromEntries(entries.map((entry) => entry.split('='))),
  outdir: target,
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node24',
  tsconfig: join(root, 'tsconfig.base.json'),
  sourcemap: 'linked',
  logLevel: 'warning',
});
process.stdout.write(`built ${outdir} (${entries.map((entry) => entry.split('=')[0]).join(', ')}) in ${Math.round(performance.now() - started)} ms\n`);
