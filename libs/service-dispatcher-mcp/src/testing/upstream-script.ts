import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The test upstream's TypeScript entry point. */
const UPSTREAM_MAIN = fileURLToPath(new URL('./upstream-main.ts', import.meta.url));

/**
 * The test upstream's entry point bundled into one plain JavaScript file (see {@link bundledScript}), kept in the
 * temporary folder. Started through tsx instead, each upstream process spent about 0.7 s of CPU in the TypeScript
 * loader before it served (bundled: 0.15 s), and the suites start one for most of their MCP tests.
 */
export function upstreamScript(): string {
  return bundledScript(UPSTREAM_MAIN, join(tmpdir(), 'oncegate-test-upstream'));
}

/** The last bundle made in a folder: its file name there, and each input file with its modification time. */
interface Manifest {
  readonly script: string;
  readonly inputs: Readonly<Record<string, number>>;
}

/** The bundles this process found or made, by entry point. */
const scripts = new Map<string, string>();

/**
 * `entry` and everything it imports bundled by esbuild into one ES module that runs on Node alone, as the apps are
 * built, in `folder`: made again only when one of the files the last bundle there was made of has changed since (or is
 * gone), so the test files of a run share one. A bundle is named by the hash of its text and written under a temporary
 * name, then renamed into place, as the folder's manifest is: processes that make one at the same time never read half
 * a file. Returns the bundle's path.
 */
export function bundledScript(entry: string, folder: string): string {
  let script = scripts.get(entry);
  if (script === undefined) {
    script = keptScript(folder) ?? makeScript(entry, folder);
    scripts.set(entry, script);
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
  const unchanged = Object.entries(manifest.inputs).every(([input, mtimeMs]) => existsSync(input) && statSync(input).mtimeMs === mtimeMs);
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
