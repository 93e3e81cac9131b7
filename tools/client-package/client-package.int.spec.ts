import { execFile } from 'node:child_process';
import { copyFileSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// eslint-disable-next-line @nx/enforce-module-boundaries -- a real gateway process and target, as the end-to-end suites start them
import { gatewayScenario, executionOf } from '../../test/support/scenario';
import { API_REPORT, buildClientPackage, checkClientApi, clientManifest, packClientPackage, ROOT, UPDATE_API_COMMAND } from './client-package';

const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** Runs a command to its end without blocking this process (the gateway's output keeps flowing into its pipes). */
function run(command: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeout?: number }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(command, args, { ...options, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      done({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr: `${stderr}${error && typeof error.code !== 'number' ? error.message : ''}` });
    });
  });
}

/** Whether `path` is `folder` or inside it. */
function inside(folder: string, path: string): boolean {
  const rel = relative(folder, path);
  return rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/** Every symbolic link under `dir` (npm makes them for `.bin`), with where it points. */
function symlinksUnder(dir: string): Array<{ link: string; target: string }> {
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
function seededLockfile(names: readonly string[]): string {
  const packages = (JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }).packages;
  // Node's lookup: the folder's own node_modules, then each enclosing package's, up to the root's.
  const locate = (from: string, name: string): string => {
    for (let base = from; ; base = base.includes('/node_modules/') ? base.slice(0, base.lastIndexOf('/node_modules/')) : '') {
      const location = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
      if (packages[location] !== undefined) return location;
      if (base === '') throw new Error(`${name} (needed by ${from || 'the consumer'}) is not in package-lock.json`);
    }
  };
  const seeded: Record<string, LockEntry> = {};
  const queue = names.map((name) => locate('', name));
  for (let location = queue.shift(); location !== undefined; location = queue.shift()) {
    if (seeded[location] !== undefined) continue;
    const { dev: _dev, optional: _optional, devOptional: _devOptional, peer: _peer, ...entry } = packages[location]!;
    seeded[location] = entry;
    for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies })) queue.push(locate(location, name));
  }
  return `${JSON.stringify({ name: 'consumer', lockfileVersion: 3, requires: true, packages: { '': { name: 'consumer' }, ...seeded } }, null, 2)}\n`;
}

/**
 * The environment of a process run in the consumer's folder: nothing that points back here. npm passes its settings
 * to the scripts it runs (`npm_config_local_prefix` names this repository: an npm install would go there), and Node's
 * options or module path would load or find modules of this repository.
 */
function consumerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && !['NODE_OPTIONS', 'NODE_PATH'].includes(name)));
  return { ...env, ...extra };
}

/** The ES module a team would write: it imports the package by name, from its own node_modules, and makes one call. */
const CONSUMER_SCRIPT = `import { registerHooks } from 'node:module';

// Every module this script loads, to prove that all of them come from this folder.
const loaded = [];
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    loaded.push(resolved.url);
    return resolved;
  },
});

const { OncegateClient, lostOnTheWay } = await import('@oncegate/client');
const gateway = await OncegateClient.connect({ url: process.env.GATEWAY_URL, token: process.env.GATEWAY_TOKEN });
const protocolVersion = gateway.protocolVersion;
const tools = (await gateway.listTools()).map((tool) => tool.name);
const answer = await gateway.callTool('set_config', { name: 'package.installed', value: 'on' }, { idempotencyKey: 'package-check-1' });
await gateway.close();
process.stdout.write(JSON.stringify({ protocolVersion, tools, answer, lost: lostOnTheWay(new TypeError('fetch failed')), loaded }));
`;

/** A TypeScript file of that team, type-checked against the package's declarations. */
const CONSUMER_TYPES = `import { lostOnTheWay, OncegateClient, type CallOptions, type OncegateClientOptions } from '@oncegate/client';

const options: OncegateClientOptions = { url: new URL('http://127.0.0.1:8787/mcp'), token: 'ogt_example', retries: 2, revision: 'legacy' };
const call: CallOptions = { idempotencyKey: 'deploy-42-config', run: 'deploy-42', timeoutMs: 30_000 };

export async function setConfig(): Promise<string | undefined> {
  const gateway = await OncegateClient.connect(options);
  const answer = await gateway.callTool('set_config', { name: 'feature.x', value: 'on' }, call);
  const text: unknown = answer.content[0];
  const retried: boolean = lostOnTheWay(text);
  // @ts-expect-error the arguments of a call are an object
  await gateway.callTool('set_config', 'feature.x');
  // @ts-expect-error the constructor is private: a client is made by connect
  new OncegateClient(options);
  await gateway.close();
  return retried ? gateway.protocolVersion : undefined;
}
`;

describe('@oncegate/client as a package: its public API is the committed report', () => {
  beforeAll(() => {
    buildClientPackage();
  }, 60_000);

  it('given the library as it is now, when API Extractor reads the built declarations, then the API is exactly the committed report, without findings', { timeout: 60_000 }, () => {
    const { changed, problems } = checkClientApi();
    expect(problems).toEqual([]);
    expect(changed, `the public API of @oncegate/client differs from ${API_REPORT}: run ${UPDATE_API_COMMAND} and commit the report`).toBe(false);
  });

  it('given a report that lacks one line of the API, when the API is checked, then it differs', { timeout: 60_000 }, () => {
    const folder = mkdtempSync(join(tmpdir(), 'oncegate-client-api-'));
    try {
      const report = readFileSync(join(ROOT, API_REPORT), 'utf8');
      const line = report.split('\n').find((text) => text.includes('lostOnTheWay'));
      expect(line).toBeDefined();
      writeFileSync(join(folder, 'client.api.md'), report.replace(`${line}\n`, ''));
      expect(checkClientApi({ reportFolder: folder }).changed).toBe(true);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('@oncegate/client installed from its tarball into an empty folder, outside this repository', () => {
  let consumer: string;

  beforeAll(async () => {
    const tarball = packClientPackage();
    consumer = realpathSync(mkdtempSync(join(tmpdir(), 'oncegate-client-consumer-')));
    writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`);
    // The tarball is copied in, as a team would download it: npm records where it was installed from.
    copyFileSync(tarball, join(consumer, 'oncegate-client.tgz'));
    // Node's own types, of the version this repository uses, as a TypeScript project on Node has them.
    const typesNode = (JSON.parse(readFileSync(join(ROOT, 'node_modules/@types/node/package.json'), 'utf8')) as { version: string }).version;
    // Offline: the dependencies come from npm's cache, which installing this repository filled.
    writeFileSync(join(consumer, 'package-lock.json'), seededLockfile([...Object.keys(clientManifest().dependencies), '@types/node']));
    const installed = await run('npm', ['install', '--offline', '--no-audit', '--no-fund', './oncegate-client.tgz', `@types/node@${typesNode}`], { cwd: consumer, env: consumerEnv() });
    expect(installed.status, `${installed.stdout}${installed.stderr}`).toBe(0);
  }, 120_000);

  afterAll(() => {
    if (consumer !== undefined) rmSync(consumer, { recursive: true, force: true });
  });

  it('given the tarball, then it holds the compiled JavaScript, the declarations, the manifest and the README, and no TypeScript source', () => {
    const installed = join(consumer, 'node_modules/@oncegate/client');
    const files = readdirSync(installed, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(installed, join(entry.parentPath, entry.name)))
      .sort();
    expect(files).toEqual(['README.md', 'lib/index.d.ts', 'lib/index.js', 'lib/oncegate-client.d.ts', 'lib/oncegate-client.js', 'package.json']);
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({ name: '@oncegate/client', version: clientManifest().version, type: 'module', license: 'Apache-2.0' });
    // The dependencies it declares are those the repository is built and tested with.
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const [name, range] of Object.entries(manifest['dependencies'] as Record<string, string>)) expect(range, name).toBe(root.dependencies[name]);
  });

  it('given the installed folder, then nothing in it is a link to this repository: every symbolic link stays inside the folder', () => {
    expect(inside(ROOT, consumer)).toBe(false);
    const outside = symlinksUnder(consumer).filter(({ target }) => !inside(consumer, target));
    expect(outside).toEqual([]);
    expect(inside(consumer, realpathSync(join(consumer, 'node_modules/@oncegate/client')))).toBe(true);
  });

  it('given a TypeScript file of that folder, when the repository\'s tsc checks it with the folder\'s own node_modules, then it compiles against the package\'s declarations', { timeout: 120_000 }, async () => {
    mkdirSync(join(consumer, 'src'), { recursive: true });
    writeFileSync(join(consumer, 'src/set-config.ts'), CONSUMER_TYPES);
    // skipLibCheck off: the package's declarations are themselves checked, with those of its dependencies they name
    // (the SDK's, zod's: most of the time this takes).
    const tsconfig = {
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', types: ['node'], strict: true, noEmit: true, skipLibCheck: false },
      include: ['src'],
    };
    writeFileSync(join(consumer, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
    const checked = await run(process.execPath, [TSC, '-p', 'tsconfig.json', '--listFiles'], { cwd: consumer, env: consumerEnv() });
    expect(checked.status, checked.stdout).toBe(0);
    const files = checked.stdout.split('\n').filter((line) => line.trim() !== '');
    expect(files).toContain(join(consumer, 'node_modules/@oncegate/client/lib/oncegate-client.d.ts'));
    // TypeScript's own lib files come with the compiler; every other file is the folder's.
    const compilerLibs = realpathSync(join(ROOT, 'node_modules/typescript/lib'));
    expect(files.filter((file) => !inside(consumer, file) && !inside(compilerLibs, file))).toEqual([]);
  });

  describe('with a running gateway', () => {
    const scenario = gatewayScenario();

    it('when an ES module of that folder imports @oncegate/client and calls a tool, then it gets the execution\'s answer, and every module it loaded is from that folder', { timeout: 60_000 }, async () => {
      writeFileSync(join(consumer, 'call.mjs'), CONSUMER_SCRIPT);
      const ran = await run(process.execPath, ['call.mjs'], {
        cwd: consumer,
        env: consumerEnv({ GATEWAY_URL: scenario.gateway.url, GATEWAY_TOKEN: scenario.gateway.devToken }),
        timeout: 45_000,
      });
      expect(ran.status, ran.stderr).toBe(0);
      const result = JSON.parse(ran.stdout) as { protocolVersion: string; tools: string[]; answer: unknown; lost: boolean; loaded: string[] };
      expect(result.protocolVersion).toBe('2026-07-28');
      expect(result.tools).toContain('set_config');
      expect(['completed', 'delivered']).toContain(executionOf(result.answer).state);
      expect(result.lost).toBe(true);
      expect((await scenario.target.effects()).requestsTotal).toBe(1);

      const files = result.loaded.filter((url) => url.startsWith('file:')).map((url) => fileURLToPath(url));
      expect(files).toContain(join(consumer, 'node_modules/@oncegate/client/lib/index.js'));
      expect(files.filter((file) => !inside(consumer, realpathSync(file)))).toEqual([]);
    });
  });
});
