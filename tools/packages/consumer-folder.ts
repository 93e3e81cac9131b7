import { execFile } from 'node:child_process';
import { copyFileSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ROOT } from './packages';

/*
 * A team's folder outside this repository, for the tests that install a package from its tarball: an empty
 * temporary folder, the tarballs copied in as a team would download them, and `npm install` run there offline.
 */

export const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

export interface RunResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end without blocking this process (a gateway's output keeps flowing into its pipes). */
export function run(command: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeout?: number }): Promise<RunResult> {
  return new Promise((done) => {
    execFile(command, args, { ...options, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      done({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr: `${stderr}${error && typeof error.code !== 'number' ? error.message : ''}` });
    });
  });
}

/** Whether `path` is `folder` or inside it. */
export function inside(folder: string, path: string): boolean {
  const rel = relative(folder, path);
  return rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/** Every symbolic link under `dir` (npm makes them for `.bin`), with where it points. */
export function symlinksUnder(dir: string): Array<{ link: string; target: string }> {
  const found: Array<{ link: string; target: string }> = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (lstatSync(path).isSymbolicLink()) found.push({ link: path, target: resolve(dirname(path), readlinkSync(path)) });
    else if (entry.isDirectory()) found.push(...symlinksUnder(path));
  }
  return found;
}

interface LockEntry {
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly [field: string]: unknown;
}

/**
 * A package-lock.json for the consumer's folder that holds the given packages and everything they depend on, as this
 * repository's lockfile resolved them (where, which version, which integrity). `npm ci` fills npm's cache with the
 * tarballs only, not with the registry's documents that resolving a version range needs, so `npm install --offline`
 * cannot resolve the package's dependencies by itself; with their versions already resolved it takes them from the
 * cache. The flags that describe this repository's tree (dev, optional, peer) are left for npm to work out.
 */
export function seededLockfile(names: readonly string[], devDependencies: Record<string, string> = {}): string {
  const packages = (JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }).packages;
  // Node's lookup: the folder's own node_modules, then each enclosing package's, up to the root's.
  const locate = (from: string, name: string): string | undefined => {
    for (let base = from; ; base = base.includes('/node_modules/') ? base.slice(0, base.lastIndexOf('/node_modules/')) : '') {
      const location = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
      if (packages[location] !== undefined) return location;
      if (base === '') return undefined;
    }
  };
  const seeded: Record<string, LockEntry> = {};
  const queue = names.map((name) => {
    const location = locate('', name);
    if (location === undefined) throw new Error(`${name} (needed by the consumer) is not in package-lock.json`);
    return location;
  });
  for (let location = queue.shift(); location !== undefined; location = queue.shift()) {
    if (seeded[location] !== undefined) continue;
    const { dev: _dev, optional: _optional, devOptional: _devOptional, peer: _peer, ...entry } = packages[location]!;
    seeded[location] = entry;
    const required = Object.keys({ ...entry.dependencies, ...entry.peerDependencies });
    for (const name of required) {
      const found = locate(location, name);
      // An optional peer that this repository does not install is not installed here either.
      if (found !== undefined) queue.push(found);
      else if (entry.dependencies?.[name] !== undefined) throw new Error(`${name} (needed by ${location}) is not in package-lock.json`);
    }
    // Optional dependencies for other platforms are not in this repository's tree: npm skips them there too.
    for (const name of Object.keys(entry.optionalDependencies ?? {})) {
      const found = locate(location, name);
      if (found !== undefined) queue.push(found);
    }
  }
  return `${JSON.stringify({ name: 'consumer', lockfileVersion: 3, requires: true, packages: { '': { name: 'consumer', devDependencies }, ...seeded } }, null, 2)}\n`;
}

/**
 * The environment of a process run in the consumer's folder: nothing that points back here. npm passes its settings
 * to the scripts it runs (`npm_config_local_prefix` names this repository: an npm install would go there), and Node's
 * options or module path would load or find modules of this repository.
 */
export function consumerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && !['NODE_OPTIONS', 'NODE_PATH', 'VITEST', 'VITEST_POOL_ID', 'VITEST_WORKER_ID', 'TEST'].includes(name)));
  return { ...env, ...extra };
}

/** The version of a package this repository installed (the consumer gets the same). */
export function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * A new folder outside this repository with the tarballs installed into it, offline, beside `packages` (names whose
 * version is the one installed here: a team's own TypeScript, Node's types, a test runner). Each tarball's own
 * dependencies are named in `dependenciesOf`. Returns the folder (its real path).
 */
export async function consumerFolder({
  tarballs,
  dependenciesOf,
  packages = [],
  prefix = 'oncegate-consumer-',
}: {
  tarballs: readonly string[];
  dependenciesOf: readonly string[];
  packages?: readonly string[];
  prefix?: string;
}): Promise<string> {
  const consumer = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  // The packages of the team's own are in its manifest and its lockfile at the versions installed here: npm then
  // finds them resolved and takes them from its cache, with no need to ask the registry which versions exist.
  const devDependencies = Object.fromEntries(packages.map((name) => [name, installedVersion(name)]));
  writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: 'consumer', private: true, type: 'module', devDependencies }, null, 2)}\n`);
  // The tarballs are copied in, as a team would download them: npm records where it was installed from.
  const copies = tarballs.map((tarball) => {
    copyFileSync(tarball, join(consumer, basename(tarball)));
    return `./${basename(tarball)}`;
  });
  // Offline: the dependencies come from npm's cache, which installing this repository filled.
  writeFileSync(join(consumer, 'package-lock.json'), seededLockfile([...dependenciesOf, ...packages], devDependencies));
  const installed = await run('npm', ['install', '--offline', '--no-audit', '--no-fund', ...copies], { cwd: consumer, env: consumerEnv() });
  if (installed.status !== 0) throw new Error(`npm install in ${consumer} failed (exit code ${installed.status}):\n${installed.stdout}${installed.stderr}`);
  return consumer;
}
