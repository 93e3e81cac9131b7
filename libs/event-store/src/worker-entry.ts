import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * How to start the worker thread `name` that sits beside the module at `here` (its `import.meta.url`). From a
 * bundle (dist/apps/oncegate, built by tools/build-app.mjs with an entry per worker): the `.js` file beside it. From
 * TypeScript sources (vitest, tsx): the `.ts` file bundled to one ES module by {@link bundledScript}, as the build
 * does, so a thread starts on plain JavaScript. (Each thread used to register tsx's loader and compile its modules
 * itself: about twice the start of a thread on JavaScript, paid by every verify pool and every SQLite store's writer
 * thread in the tests.) The store's writer thread and the journal's verify pool both start theirs this way.
 */
export function workerEntry(here: string, name: string): { entry: URL | string; eval: boolean } {
  if (!/\.[cm]?ts$/.test(new URL(here).pathname)) return { entry: new URL(`./${name}.js`, here), eval: false };
  return { entry: pathToFileURL(bundledScript(fileURLToPath(new URL(`./${name}.ts`, here)))), eval: false };
}

/** The last bundle made in a folder: its file name there, and each input file with its modification time. */
interface Manifest {
  readonly script: string;
  readonly inputs: Readonly<Record<string, number>>;
}

/** The bundles this process found or made, by folder and entry point. */
const scripts = new Map<string, string>();

/**
 * `entry` (a TypeScript file) and everything it imports bundled by esbuild into one ES module that runs on Node alone,
 * as the apps are built: the workspace's paths as the nearest tsconfig.json maps them, the packages bundled too. The
 * bundle is kept in `folder` (by default one for the entry under the temporary folder) and made again only when one of
 * the files the last bundle there was made of has changed since, or is gone: the processes and test files of a run
 * share one instead of each paying esbuild for it. A bundle is named by the hash of its text and written under a
 * temporary name, then renamed into place, as the folder's manifest is: processes that make one at the same time never
 * read half a file. esbuild is resolved from this package, so any working directory works. Returns the bundle's path.
 */
export function bundledScript(entry: string, folder = join(tmpdir(), 'oncegate-bundles', createHash('sha256').update(entry).digest('hex').slice(0, 16))): string {
  const key = `${folder}\n${entry}`;
  let script = scripts.get(key);
  if (script === undefined) {
    script = keptScript(folder) ?? makeScript(entry, folder);
    scripts.set(key, script);
  }
  return script;
}

function keptScript(folder: string): string | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(folder, 'manifest.json'), 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
  const path = join(folder, manifest.script);
  const unchanged = Object.entries(manifest.inputs).every(([input, mtimeMs]) => statSync(input, { throwIfNoEntry: false })?.mtimeMs === mtimeMs);
  return unchanged && existsSync(path) ? path : undefined;
}

function makeScript(entry: string, folder: string): string {
  const { buildSync } = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const workingDir = dirname(entry);
  const { outputFiles, metafile } = buildSync({
    absWorkingDir: workingDir,
    entryPoints: [entry],
    write: false,
    bundle: true,
    metafile: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    // The packages written as CommonJS call require() for Node's own modules; an ES module has none of its own.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    logLevel: 'error',
  });
  const code = outputFiles[0]!.contents;
  const name = `${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`;
  const inputs = Object.fromEntries(
    Object.keys(metafile.inputs).map((input) => {
      const path = resolve(workingDir, input);
      return [path, statSync(path).mtimeMs];
    }),
  );
  mkdirSync(folder, { recursive: true });
  const unique = `.${process.pid}-${Date.now()}`;
  const path = join(folder, name);
  writeFileSync(path + unique, code);
  renameSync(path + unique, path);
  writeFileSync(join(folder, `manifest.json${unique}`), JSON.stringify({ script: name, inputs } satisfies Manifest));
  renameSync(join(folder, `manifest.json${unique}`), join(folder, 'manifest.json'));
  return path;
}
