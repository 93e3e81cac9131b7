/**
 * Builds the packages a team outside this repository installs — `@oncegate/client` (libs/client) and
 * `@oncegate/dispatcher-kit` (libs/dispatcher-kit) — packs them, and checks their public API against the committed
 * reports.
 *
 *   npm run pack:client               # dist/packages/oncegate-client-<version>.tgz
 *   npm run pack:kit                  # dist/packages/oncegate-dispatcher-kit-<version>.tgz
 *   npm run api                       # rewrites every package's API report (libs/<lib>/api/*.api.md)
 *   npm run api -- --check            # changes nothing; exits 1 when a built API differs from its report
 *
 * The client is compiled by tsc with the library's own tsconfig (Node's module resolution, no path aliases). The kit
 * stands on this repository's libraries (the host that runs its dispatcher, the store adapters, the vault), which are
 * not published: esbuild bundles them into the kit's JavaScript, leaving every npm package to the manifest's
 * dependencies, and API Extractor rolls each entry point's declarations up into one file with those libraries'
 * types inlined — only what the entry point's API names. Each package is assembled in dist/packages/<lib> beside a
 * copy of its manifest and README; `npm pack` makes the tarball from that folder.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Extractor, ExtractorConfig, type ExtractorMessage, type IConfigFile } from '@microsoft/api-extractor';
import { build } from 'esbuild';
import { asciiFiles } from '../ascii-output.mjs';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Where `npm pack` puts the tarballs, relative to the repository root. */
export const TARBALL_DIR = 'dist/packages';
/** The command that brings the reports in line with the code: named by every failure of the check. */
export const UPDATE_API_COMMAND = 'npm run api';

const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** One entry point of a package: its subpath in `exports`, its source, and the file of its API report. */
export interface PackageEntry {
  /** `.`, `./testing`, … */
  readonly subpath: string;
  /** The TypeScript source, relative to the repository root. */
  readonly source: string;
  /** The file name of its built JavaScript and declarations in lib/, without extension. */
  readonly file: string;
  /** The API report's name (`<report>.api.md` in the library's api/ folder). */
  readonly report: string;
}

/** A package of this repository. */
export interface PackageSpec {
  /** `client`, `dispatcher-kit`: the name the commands take. */
  readonly key: string;
  /** The library's folder, relative to the repository root. */
  readonly libraryDir: string;
  readonly entries: readonly PackageEntry[];
  /** npm packages the code loads by `require` at run time, which the bundle's imports do not show. */
  readonly loadedAtRunTime?: readonly string[];
  /** Compiles the library into `<packageDir>/lib`: JavaScript and declarations. */
  compile(spec: PackageSpec): Promise<void>;
  /** API Extractor's settings for one entry: where its declarations are, and how they resolve. */
  extractorSettings(spec: PackageSpec, entry: PackageEntry): { mainEntryPointFilePath: string; compiler: IConfigFile['compiler']; bundledPackages: string[] };
}

/** A step of a build that failed, with what its tool printed. */
export class PackageBuildError extends Error {
  override readonly name = 'PackageBuildError';
}

export interface PackageManifest {
  readonly name: string;
  readonly version: string;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
}

/** The package's manifest as committed (`<libraryDir>/package.json`). */
export function manifestOf(spec: PackageSpec): PackageManifest {
  return JSON.parse(readFileSync(join(ROOT, spec.libraryDir, 'package.json'), 'utf8')) as PackageManifest;
}

/** Where the package is assembled, relative to the repository root. */
export function packageDir(spec: PackageSpec): string {
  return join(TARBALL_DIR, spec.key);
}

/** The API report of an entry, relative to the repository root. */
export function reportPath(spec: PackageSpec, entry: PackageEntry): string {
  return join(spec.libraryDir, 'api', `${entry.report}.api.md`);
}

function tsc(project: string): void {
  const compiled = spawnSync(process.execPath, [TSC, '-p', join(ROOT, project)], { cwd: ROOT, encoding: 'utf8' });
  if (compiled.status !== 0) throw new PackageBuildError(`tsc -p ${project} failed (exit code ${compiled.status ?? compiled.signal}):\n${compiled.stdout}${compiled.stderr}`);
}

/** The npm that runs this script (npm sets npm_execpath for its scripts and npx), else the one on the PATH. */
function npm(args: readonly string[], cwd: string): { status: number | null; stdout: string; stderr: string } {
  const execPath = process.env['npm_execpath'];
  const [command, commandArgs] = execPath && /npm-cli\.js$/.test(execPath) ? [process.execPath, [execPath, ...args]] : ['npm', [...args]];
  const result = spawnSync(command, commandArgs, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { status: result.status, stdout: result.stdout ?? '', stderr: `${result.stderr ?? ''}${result.error ? `${result.error.message}\n` : ''}` };
}

/** tsconfig.base.json's path aliases: `@oncegate/<lib>[/<entry>]` → its source, relative to the root. */
function workspaceAliases(): Record<string, string> {
  const text = readFileSync(join(ROOT, 'tsconfig.base.json'), 'utf8');
  const { compilerOptions } = JSON.parse(text) as { compilerOptions: { paths: Record<string, [string]> } };
  return Object.fromEntries(Object.entries(compilerOptions.paths).map(([alias, [target]]) => [alias, target.replace(/^\.\//, '')]));
}

/** The npm package a bare import names (`@scope/name/sub` → `@scope/name`), or undefined for Node's own modules. */
function packageNameOf(specifier: string): string | undefined {
  if (specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0]!)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

export const CLIENT: PackageSpec = {
  key: 'client',
  libraryDir: 'libs/client',
  entries: [{ subpath: '.', source: 'libs/client/src/index.ts', file: 'index', report: 'client' }],
  async compile() {
    tsc('libs/client/tsconfig.package.json');
  },
  extractorSettings(spec) {
    return {
      mainEntryPointFilePath: join(ROOT, packageDir(spec), 'lib/index.d.ts'),
      compiler: { tsconfigFilePath: join(ROOT, spec.libraryDir, 'tsconfig.package.json') },
      bundledPackages: [],
    };
  },
};

/** Where tsc puts the declarations of the kit and of every library they reach, before they are rolled up. */
const KIT_TYPES_DIR = 'dist/packages/dispatcher-kit-types';

export const DISPATCHER_KIT: PackageSpec = {
  key: 'dispatcher-kit',
  libraryDir: 'libs/dispatcher-kit',
  // The host's logger loads pino-pretty only when its lines go to a terminal (libs/host-operations/src/logger.ts).
  loadedAtRunTime: ['pino-pretty'],
  entries: [
    { subpath: '.', source: 'libs/dispatcher-kit/src/index.ts', file: 'index', report: 'dispatcher-kit' },
    { subpath: './testing', source: 'libs/dispatcher-kit/src/testing/index.ts', file: 'testing', report: 'dispatcher-kit-testing' },
    { subpath: './testing/vitest', source: 'libs/dispatcher-kit/src/testing/vitest.ts', file: 'testing-vitest', report: 'dispatcher-kit-testing-vitest' },
  ],
  async compile(spec) {
    const lib = join(ROOT, packageDir(spec), 'lib');
    // One folder for the entries, their shared chunks and the store's worker threads: a worker is found beside the
    // module that starts it (worker-entry.ts), whichever chunk that module landed in.
    const bundled = await build({
      absWorkingDir: ROOT,
      entryPoints: {
        ...Object.fromEntries(spec.entries.map((entry) => [entry.file, join(ROOT, entry.source)])),
        'sqlite-writer-worker': join(ROOT, 'libs/event-store-sqlite/src/sqlite-writer-worker.ts'),
        'verify-worker': join(ROOT, 'libs/journal/src/verify-worker.ts'),
      },
      outdir: lib,
      bundle: true,
      splitting: true,
      chunkNames: '[name]-[hash]',
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node24',
      tsconfig: join(ROOT, 'tsconfig.base.json'),
      metafile: true,
      logLevel: 'silent',
    }).catch((error: Error) => {
      throw new PackageBuildError(`esbuild could not bundle ${spec.libraryDir}: ${error.message}`);
    });
    checkDependencies(spec, bundled.metafile);
    // As the apps' bundles: ASCII, so the process that imports the kit keeps its source at one byte a character.
    await asciiFiles(
      Object.keys(bundled.metafile.outputs)
        .filter((file) => file.endsWith('.js'))
        .map((file) => join(ROOT, file)),
      ROOT,
    );
    rmSync(join(ROOT, KIT_TYPES_DIR), { recursive: true, force: true });
    tsc(join(spec.libraryDir, 'tsconfig.package.json'));
    // Each entry's rollup is also installed, as the package would be, where the declarations of the next entries find
    // it by the package's name: a testing entry imports the kit's public types from there instead of copying them.
    const installed = join(ROOT, KIT_TYPES_DIR, 'node_modules', manifestOf(spec).name);
    mkdirSync(installed, { recursive: true });
    writeFileSync(join(installed, 'package.json'), JSON.stringify({ name: manifestOf(spec).name, exports: exportsOf(spec) }));
    for (const entry of spec.entries) {
      const rollup = join(lib, `${entry.file}.d.ts`);
      const { problems } = runExtractor(spec, entry, { rollup });
      if (problems.length > 0) throw new PackageBuildError(`the declarations of ${entry.subpath} cannot be rolled up:\n  ${problems.join('\n  ')}`);
      copyFileSync(rollup, join(installed, `${entry.file}.d.ts`));
    }
  },
  extractorSettings(spec, entry) {
    const types = join(ROOT, KIT_TYPES_DIR);
    const aliases = workspaceAliases();
    // The declarations keep this repository's import names; they resolve to the emitted declarations, and every
    // library but the kit itself is inlined (the testing entries import the kit's public types by its name).
    const paths = Object.fromEntries(
      Object.entries(aliases)
        .filter(([alias]) => !ownAlias(alias))
        .map(([alias, target]) => [alias, [join(types, target.replace(/\.ts$/, '.d.ts'))]]),
    );
    return {
      mainEntryPointFilePath: join(types, entry.source.replace(/\.ts$/, '.d.ts')),
      compiler: {
        overrideTsconfig: {
          compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2023'], types: ['node'], strict: true, skipLibCheck: true, paths },
        },
      },
      bundledPackages: Object.keys(aliases).filter((alias) => !ownAlias(alias)),
    };
  },
};

/** The kit's own names: resolved as an installed package (above), never inlined. */
function ownAlias(alias: string): boolean {
  return alias === '@oncegate/dispatcher-kit' || alias.startsWith('@oncegate/dispatcher-kit/');
}

/** The declarations part of a package's `exports`: each entry's subpath to its rolled-up file. */
function exportsOf(spec: PackageSpec): Record<string, { types: string }> {
  return Object.fromEntries(spec.entries.map((entry) => [entry.subpath, { types: `./${entry.file}.d.ts` }]));
}

export const PACKAGES: readonly PackageSpec[] = [CLIENT, DISPATCHER_KIT];

/**
 * The npm packages the bundle imports must be exactly those the manifest declares (dependencies, or peer dependencies
 * for what only a testing entry needs), each with the range this repository is built and tested with.
 */
function checkDependencies(spec: PackageSpec, metafile: { outputs: Record<string, { imports: ReadonlyArray<{ path: string; external?: boolean }> }> }): void {
  const imported = new Set<string>(spec.loadedAtRunTime);
  for (const output of Object.values(metafile.outputs)) {
    for (const { path, external } of output.imports) {
      const name = external ? packageNameOf(path) : undefined;
      if (name !== undefined) imported.add(name);
    }
  }
  const manifest = manifestOf(spec);
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
  const rootRange = (name: string) => root.dependencies[name] ?? root.devDependencies[name];
  // A peer (the team's own test runner) is declared as a caret range from the version this repository is tested
  // with: the team keeps its own within that major version.
  const expected = (name: string) => (manifest.peerDependencies?.[name] !== undefined && /^\d/.test(rootRange(name) ?? '') ? `^${rootRange(name)}` : rootRange(name));
  const declared = { ...manifest.dependencies, ...manifest.peerDependencies };
  const problems = [
    ...[...imported].filter((name) => declared[name] === undefined).map((name) => `${name} is imported but not declared (add "${name}": "${rootRange(name) ?? '?'}")`),
    ...Object.keys(declared)
      .filter((name) => !imported.has(name))
      .map((name) => `${name} is declared but nothing imports it`),
    ...Object.entries(declared)
      .filter(([name, range]) => imported.has(name) && range !== expected(name))
      .map(([name, range]) => `${name}: ${range} differs from ${expected(name)} (the repository's ${rootRange(name)})`),
  ];
  if (problems.length > 0) throw new PackageBuildError(`${spec.libraryDir}/package.json does not match what the package imports:\n  ${[...problems].sort().join('\n  ')}`);
}

/**
 * Builds the package into dist/packages/<key> (starting from an empty folder, so nothing of an earlier build is
 * packed) and copies its manifest and README beside the compiled lib/. Returns the folder.
 */
export async function buildPackage(spec: PackageSpec): Promise<string> {
  const dir = join(ROOT, packageDir(spec));
  rmSync(dir, { recursive: true, force: true });
  await spec.compile(spec);
  mkdirSync(dir, { recursive: true });
  for (const file of ['package.json', 'README.md']) copyFileSync(join(ROOT, spec.libraryDir, file), join(dir, file));
  return dir;
}

/** The builds this process made with `buildPackageOnce`, by package. */
const builds = new Map<PackageSpec, Promise<string>>();

/** `buildPackage`, once per package in this process: the tests that read the build and pack it share one. */
export function buildPackageOnce(spec: PackageSpec): Promise<string> {
  let built = builds.get(spec);
  if (built === undefined) builds.set(spec, (built = buildPackage(spec)));
  return built;
}

/** Packs the package, as this process built it (`buildPackageOnce`), with `npm pack`; returns the tarball's absolute path. */
export async function packPackage(spec: PackageSpec): Promise<string> {
  const dir = await buildPackageOnce(spec);
  const destination = join(ROOT, TARBALL_DIR);
  const packed = npm(['pack', dir, '--pack-destination', destination, '--json', '--silent'], ROOT);
  if (packed.status !== 0) throw new PackageBuildError(`npm pack ${packageDir(spec)} failed (exit code ${packed.status}):\n${packed.stdout}${packed.stderr}`);
  const [summary] = JSON.parse(packed.stdout) as Array<{ filename: string }>;
  if (summary === undefined) throw new PackageBuildError(`npm pack ${packageDir(spec)} named no tarball:\n${packed.stdout}`);
  return join(destination, summary.filename);
}

export interface ApiCheck {
  /** The reports (relative to the root) whose API differs from the built declarations. */
  readonly changed: readonly string[];
  /** API Extractor's errors and warnings (a type the API uses but does not export, …), as text. */
  readonly problems: readonly string[];
}

/**
 * API Extractor over one entry's declarations: `rollup` writes them rolled up into that file; `report` compares
 * them with the entry's report (`update` writes it when it differs; `reportFolder` stands in for the library's api/
 * folder, for a test that proves the check notices a difference).
 */
function runExtractor(
  spec: PackageSpec,
  entry: PackageEntry,
  { rollup, report }: { rollup?: string; report?: { update: boolean; reportFolder?: string } },
): { changed: boolean; problems: string[] } {
  const settings = spec.extractorSettings(spec, entry);
  if (report?.update) mkdirSync(report.reportFolder ?? join(ROOT, spec.libraryDir, 'api'), { recursive: true });
  const configObject: IConfigFile = {
    projectFolder: join(ROOT, spec.libraryDir),
    mainEntryPointFilePath: settings.mainEntryPointFilePath,
    bundledPackages: settings.bundledPackages,
    compiler: settings.compiler,
    apiReport: {
      enabled: report !== undefined,
      reportFileName: entry.report,
      reportFolder: report?.reportFolder ?? join(ROOT, spec.libraryDir, 'api'),
      reportTempFolder: join(ROOT, TARBALL_DIR, `${spec.key}-api`),
    },
    docModel: { enabled: false },
    dtsRollup: { enabled: rollup !== undefined, ...(rollup === undefined ? {} : { untrimmedFilePath: rollup }) },
    tsdocMetadata: { enabled: false },
    messages: { extractorMessageReporting: { default: { logLevel: 'warning' as never }, 'ae-missing-release-tag': { logLevel: 'none' as never } } },
  };
  const config = ExtractorConfig.prepare({
    configObject,
    configObjectFullPath: join(ROOT, spec.libraryDir, 'api-extractor.json'),
    packageJsonFullPath: join(ROOT, spec.libraryDir, 'package.json'),
  });
  const problems: string[] = [];
  const result = Extractor.invoke(config, {
    localBuild: report?.update ?? false,
    messageCallback: (message: ExtractorMessage) => {
      // The report's own verdict is `apiReportChanged`; the rest are findings about the declarations.
      if (message.messageId.startsWith('console-')) {
        message.handled = true;
        return;
      }
      if (message.logLevel === 'error' || message.logLevel === 'warning') problems.push(message.formatMessageWithLocation(ROOT));
      message.handled = true;
    },
  });
  return { changed: result.apiReportChanged, problems };
}

/**
 * Builds the package (unless `built`: buildPackage ran already) and runs API Extractor over each entry's declarations.
 * `update`: writes a report that differs; otherwise the reports are left alone and `changed` names those that differ.
 */
export async function checkApi(
  spec: PackageSpec,
  { update = false, reportFolder, built = false, entries = spec.entries }: { update?: boolean; reportFolder?: string; built?: boolean; entries?: readonly PackageEntry[] } = {},
): Promise<ApiCheck> {
  if (!built) await buildPackage(spec);
  const changed: string[] = [];
  const problems: string[] = [];
  for (const entry of entries) {
    const result = runExtractor(spec, entry, { report: { update, ...(reportFolder === undefined ? {} : { reportFolder }) } });
    if (result.changed) changed.push(reportPath(spec, entry));
    problems.push(...result.problems);
  }
  return { changed, problems };
}

const USAGE = `usage: node tools/packages/packages.ts pack <${PACKAGES.map((spec) => spec.key).join('|')}>
       node tools/packages/packages.ts api [--check] [<package>...]
`;

async function main(args: readonly string[]): Promise<number> {
  const [command, ...rest] = args;
  const check = command === 'api' && rest.includes('--check');
  const keys = rest.filter((arg) => arg !== '--check' || command !== 'api');
  const unknown = keys.filter((key) => !PACKAGES.some((spec) => spec.key === key));
  if ((command !== 'pack' && command !== 'api') || unknown.length > 0 || (command === 'pack' && keys.length !== 1)) {
    process.stderr.write(`${unknown.length > 0 ? `unknown package ${unknown.join(', ')}\n` : ''}${USAGE}`);
    return 2;
  }
  const specs = keys.length === 0 ? PACKAGES : PACKAGES.filter((spec) => keys.includes(spec.key));
  try {
    if (command === 'pack') {
      process.stdout.write(`${await packPackage(specs[0]!)}\n`);
      return 0;
    }
    let failed = false;
    for (const spec of specs) {
      const { changed, problems } = await checkApi(spec, { update: !check });
      for (const problem of problems) process.stderr.write(`${problem}\n`);
      failed ||= problems.length > 0;
      if (changed.length > 0 && check) {
        process.stderr.write(`the public API of ${manifestOf(spec).name} differs from ${changed.join(', ')}; run ${UPDATE_API_COMMAND} and commit the report\n`);
        failed = true;
      } else {
        const reports = spec.entries.map((entry) => reportPath(spec, entry));
        process.stdout.write(changed.length > 0 ? `${changed.join(', ')} updated: review and commit\n` : `${reports.join(', ')} up to date\n`);
      }
    }
    return failed ? 1 : 0;
  } catch (error) {
    if (!(error instanceof PackageBuildError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 1;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
