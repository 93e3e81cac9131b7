import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// eslint-disable-next-line @nx/enforce-module-boundaries -- a real gateway process and target, as the end-to-end suites start them
import { gatewayScenario, executionOf } from '../../test/support/scenario';
import { consumerEnv, consumerFolder, inside, run, symlinksUnder, TSC } from './consumer-folder';
import { buildPackageOnce, checkApi, CLIENT, manifestOf, packPackage, reportPath, ROOT, UPDATE_API_COMMAND } from './packages';

const API_REPORT = reportPath(CLIENT, CLIENT.entries[0]!);
const clientManifest = () => manifestOf(CLIENT) as { name: string; version: string; dependencies: Record<string, string> };

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
  beforeAll(async () => {
    await buildPackageOnce(CLIENT);
  }, 60_000);

  it('given the library as it is now, when API Extractor reads the built declarations, then the API is exactly the committed report, without findings', { timeout: 60_000 }, async () => {
    const { changed, problems } = await checkApi(CLIENT, { built: true });
    expect(problems).toEqual([]);
    expect(changed, `the public API of @oncegate/client differs from ${API_REPORT}: run ${UPDATE_API_COMMAND} and commit the report`).toEqual([]);
  });

  it('given a report that lacks one line of the API, when the API is checked, then it differs', { timeout: 60_000 }, async () => {
    const folder = mkdtempSync(join(tmpdir(), 'oncegate-client-api-'));
    try {
      const report = readFileSync(join(ROOT, API_REPORT), 'utf8');
      const line = report.split('\n').find((text) => text.includes('lostOnTheWay'));
      expect(line).toBeDefined();
      writeFileSync(join(folder, 'client.api.md'), report.replace(`${line}\n`, ''));
      expect((await checkApi(CLIENT, { reportFolder: folder, built: true })).changed).toEqual([API_REPORT]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('@oncegate/client installed from its tarball into an empty folder, outside this repository', () => {
  let consumer: string;

  beforeAll(async () => {
    // Node's own types, of the version this repository uses, as a TypeScript project on Node has them.
    consumer = await consumerFolder({ tarballs: [await packPackage(CLIENT)], dependenciesOf: Object.keys(clientManifest().dependencies), packages: ['@types/node'], prefix: 'oncegate-client-consumer-' });
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
