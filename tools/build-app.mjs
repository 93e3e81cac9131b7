// Compiles one app to JavaScript: `node tools/build-app.mjs <outdir> <name>=<entry.ts> [<name>=<entry.ts> ...]`.
// Each app's `build` target (its project.json) names its entry points; `npm run build` runs them all.
//
// esbuild bundles the workspace's own code (the @oncegate/* libraries resolve through tsconfig paths) and the npm
// packages it imports into one ES module per entry, so the output runs on plain Node with no TypeScript loader and
// a command starts without resolving and reading a thousand package files one by one (`oncegate --help` spent about
// half its time there). Packages stay in node_modules, loaded from there when they are used, where one copy must serve
// everything or the package finds files of its own folder at run time (`INSTALLED`); so do optional packages that
// are not installed (a package's lazy import of one is left for it to fail on, as before). Decorators compile as the
// sources declare them (experimentalDecorators); the services name their injection tokens, so no emitted design
// metadata is needed.
import { build } from 'esbuild';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { asciiFiles } from './ascii-output.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
const [outdir, ...entries] = process.argv.slice(2);
if (outdir === undefined || entries.length === 0 || entries.some((entry) => !/^[\w-]+=.+\.ts$/.test(entry))) {
  process.stderr.write('usage: node tools/build-app.mjs <outdir> <name>=<entry.ts> [<name>=<entry.ts> ...]\n');
  process.exit(2);
}

/**
 * Packages loaded from node_modules at run time, never copied into the output:
 * - pino and the packages of its log transport, which starts worker threads from files of its own folder;
 * - the packages the workspace's code loads on demand through `createRequire` (kafkajs, undici, ssh2, pino-pretty):
 *   a copy in the output beside the one loaded on demand would be a second module (its own classes, its own state);
 * - @readme/openapi-parser, imported on demand by `oncegate contracts import`;
 * - reflect-metadata, which every output file imports first (the banner below).
 */
const INSTALLED = [/^reflect-metadata$/, /^pino(-.*)?$/, /^thread-stream$/, /^sonic-boom$/, /^kafkajs$/, /^undici$/, /^ssh2$/, /^@readme\//];

/** The package a bare import names: `@scope/name` or `name`. */
const packageOf = (specifier) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

const packagesPlugin = {
  name: 'packages',
  setup(on) {
    // Bare imports only: relative paths, node: built-ins' own prefix and a package's `#` imports resolve as usual.
    on.onResolve({ filter: /^[^./#]/ }, ({ path }) => {
      if (path.startsWith('node:')) return { external: true };
      if (path.startsWith('@oncegate/')) return undefined;
      const name = packageOf(path);
      if (INSTALLED.some((pattern) => pattern.test(name)) || !existsSync(join(root, 'node_modules', name))) return { external: true };
      return undefined;
    });
  },
};

const target = join(root, outdir);
rmSync(target, { recursive: true, force: true });
const started = performance.now();
await build({
  absWorkingDir: root,
  entryPoints: Object.fromEntries(entries.map((entry) => entry.split('='))),
  outdir: target,
  bundle: true,
  plugins: [packagesPlugin],
  platform: 'node',
  format: 'esm',
  // Code that an entry imports on demand (`import()`: the CLI's commands) and code that several entries share go to
  // chunks beside them: a command evaluates its own code and what it imports, not every other command's.
  splitting: true,
  chunkNames: '[name]-[hash]',
  target: 'node24',
  // Classes and functions keep their names: NestJS names its loggers' contexts and its errors after them.
  keepNames: true,
  // The packages written as CommonJS call require() for Node's own modules; an ES module has none of its own.
  // Nest's decorators read and write metadata through the Reflect polyfill as their classes are defined, and Nest's
  // own files count on an earlier import of it. Split in chunks, esbuild does not keep the order in which the
  // modules' top-level code runs across them (a documented limit of its code splitting), so every output file loads
  // the polyfill from node_modules before anything else (an ES module is evaluated once, however often imported).
  banner: {
    js: "import 'reflect-metadata'; import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  tsconfig: join(root, 'tsconfig.base.json'),
  sourcemap: 'linked',
  logLevel: 'warning',
});
// The comments esbuild keeps are copied as written; their non-ASCII characters would double the source's memory.
await asciiFiles(
  readdirSync(target)
    .filter((name) => name.endsWith('.js'))
    .map((name) => join(target, name)),
  root,
);
process.stdout.write(`built ${outdir} (${entries.map((entry) => entry.split('=')[0]).join(', ')}) in ${Math.round(performance.now() - started)} ms\n`);
