/**
 * Builds `@oncegate/client` (libs/client) as the package a team outside this repository installs, packs it, and
 * checks its public API against the committed report.
 *
 *   npm run pack:client              # dist/packages/oncegate-client-<version>.tgz
 *   npm run api:client               # rewrites libs/client/api/client.api.md from the built declarations
 *   npm run api:client -- --check    # changes nothing; exits 1 when the built API differs from the report
 *
 * The package is compiled by tsc with the library's own tsconfig (libs/client/tsconfig.package.json: Node's module
 * resolution, no path aliases) into dist/packages/client/lib, beside a copy of its manifest (libs/client/package.json)
 * and README; `npm pack` makes the tarball from that folder.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Extractor, ExtractorConfig, type ExtractorMessage } from '@microsoft/api-extractor';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The library's folder, relative to the repository root. */
export const LIBRARY_DIR = 'libs/client';
/** Where the package is assembled (manifest, README, `lib/`), relative to the repository root. */
export const PACKAGE_DIR = 'dist/packages/client';
/** Where `npm pack` puts the tarball. */
export const TARBALL_DIR = 'dist/packages';
/** The committed API report, relative to the repository root. */
export const API_REPORT = 'libs/client/api/client.api.md';
/** The command that brings the report in line with the code: named by every failure of the check. */
export const UPDATE_API_COMMAND = 'npm run api:client';

const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const API_EXTRACTOR_CONFIG = join(ROOT, LIBRARY_DIR, 'api-extractor.json');

/** A step of the build that failed, with what its tool printed. */
export class ClientPackageError extends Error {
  override readonly name = 'ClientPackageError';
}

/** The npm that runs this script (npm sets npm_execpath for its scripts and npx), else the one on the PATH. */
function npm(args: readonly string[], cwd: string): { status: number | null; stdout: string; stderr: string } {
  const execPath = process.env['npm_execpath'];
  const [command, commandArgs] = execPath && /npm-cli\.js$/.test(execPath) ? [process.execPath, [execPath, ...args]] : ['npm', [...args]];
  const result = spawnSync(command, commandArgs, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { status: result.status, stdout: result.stdout ?? '', stderr: `${result.stderr ?? ''}${result.error ? `${result.error.message}\n` : ''}` };
}

/** The package's manifest as committed (libs/client/package.json). */
export function clientManifest(): { name: string; version: string; dependencies: Record<string, string> } {
  return JSON.parse(readFileSync(join(ROOT, LIBRARY_DIR, 'package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string> };
}

/**
 * Compiles the library into dist/packages/client/lib (JavaScript and declarations, no sources) and copies its manifest
 * and README beside it. Starts from an empty folder, so nothing of an earlier build is packed. Returns the folder.
 */
export function buildClientPackage(): string {
  const dir = join(ROOT, PACKAGE_DIR);
  rmSync(dir, { recursive: true, force: true });
  const compiled = spawnSync(process.execPath, [TSC, '-p', join(ROOT, LIBRARY_DIR, 'tsconfig.package.json')], { cwd: ROOT, encoding: 'utf8' });
  if (compiled.status !== 0) {
    throw new ClientPackageError(`tsc -p ${LIBRARY_DIR}/tsconfig.package.json failed (exit code ${compiled.status ?? compiled.signal}):\n${compiled.stdout}${compiled.stderr}`);
  }
  mkdirSync(dir, { recursive: true });
  for (const file of ['package.json', 'README.md']) copyFileSync(join(ROOT, LIBRARY_DIR, file), join(dir, file));
  return dir;
}

/** Builds the package and packs it with `npm pack`; returns the tarball's absolute path. */
export function packClientPackage(): string {
  const dir = buildClientPackage();
  const destination = join(ROOT, TARBALL_DIR);
  const packed = npm(['pack', dir, '--pack-destination', destination, '--json', '--silent'], ROOT);
  if (packed.status !== 0) throw new ClientPackageError(`npm pack ${PACKAGE_DIR} failed (exit code ${packed.status}):\n${packed.stdout}${packed.stderr}`);
  const [summary] = JSON.parse(packed.stdout) as Array<{ filename: string }>;
  if (summary === undefined) throw new ClientPackageError(`npm pack ${PACKAGE_DIR} named no tarball:\n${packed.stdout}`);
  return join(destination, summary.filename);
}

export interface ApiCheck {
  /** Whether the API of the built declarations differs from the report. */
  readonly changed: boolean;
  /** API Extractor's errors and warnings (an undocumented or unexported type the API uses, …), as text. */
  readonly problems: readonly string[];
}

/**
 * Runs API Extractor over the built declarations (buildClientPackage first). `update`: writes the report when it
 * differs; otherwise the report is left alone and `changed` says whether it differs. `reportFolder` replaces the
 * folder of the committed report (for a test that proves the check notices a difference).
 */
export function checkClientApi({ update = false, reportFolder }: { update?: boolean; reportFolder?: string } = {}): ApiCheck {
  const configObject = ExtractorConfig.loadFile(API_EXTRACTOR_CONFIG);
  if (reportFolder !== undefined) configObject.apiReport = { ...configObject.apiReport!, reportFolder };
  const config = ExtractorConfig.prepare({ configObject, configObjectFullPath: API_EXTRACTOR_CONFIG, packageJsonFullPath: join(ROOT, LIBRARY_DIR, 'package.json') });
  const problems: string[] = [];
  const result = Extractor.invoke(config, {
    localBuild: update,
    messageCallback: (message: ExtractorMessage) => {
      // The report's own verdict is `apiReportChanged`; the rest are findings about the declarations.
      if (message.messageId.startsWith('console-api-report-')) {
        message.handled = true;
        return;
      }
      if (message.logLevel === 'error' || message.logLevel === 'warning') problems.push(message.formatMessageWithLocation(ROOT));
      message.handled = true;
    },
  });
  return { changed: result.apiReportChanged, problems };
}

function main(args: readonly string[]): number {
  const [command, ...rest] = args;
  const unknown = rest.filter((arg) => !(command === 'api' && arg === '--check'));
  if ((command !== 'pack' && command !== 'api') || unknown.length > 0) {
    process.stderr.write('usage: npm run pack:client | npm run api:client [-- --check]\n');
    return 2;
  }
  try {
    if (command === 'pack') {
      process.stdout.write(`${packClientPackage()}\n`);
      return 0;
    }
    buildClientPackage();
    const check = rest.includes('--check');
    const { changed, problems } = checkClientApi({ update: !check });
    for (const problem of problems) process.stderr.write(`${problem}\n`);
    if (changed && check) {
      process.stderr.write(`the public API of @oncegate/client differs from ${API_REPORT}; run ${UPDATE_API_COMMAND} and commit the report\n`);
      return 1;
    }
    process.stdout.write(changed ? `${API_REPORT} updated: review and commit it\n` : `${API_REPORT} is up to date\n`);
    return problems.length > 0 ? 1 : 0;
  } catch (error) {
    if (!(error instanceof ClientPackageError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 1;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
