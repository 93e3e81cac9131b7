import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
/* eslint-disable @nx/enforce-module-boundaries -- a real gateway process, as the end-to-end suites start them */
import { startService, type ServiceProcess } from '../../deploy/local';
import { gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../../test/support/gateway-process';
import { connectClient } from '../../test/support/mcp-clients';
import { executionOf, textOf } from '../../test/support/scenario';
/* eslint-enable @nx/enforce-module-boundaries */
import { consumerEnv, consumerFolder, inside, run, symlinksUnder } from './consumer-folder';
import { buildPackageOnce, checkApi, DISPATCHER_KIT, manifestOf, packPackage, reportPath, ROOT, UPDATE_API_COMMAND } from './packages';

/** The channel a team writes outside this repository, on the package alone (examples/ledger-channel). */
const EXAMPLE = join(ROOT, 'examples/ledger-channel');

/** Loaded with `--import` into the channel's process: every module it loads, written to a file when it exits. */
const RECORD_MODULES = `import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';

const loaded = [];
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    loaded.push(resolved.url);
    return resolved;
  },
});
process.on('exit', () => writeFileSync(process.env.LOADED_MODULES_FILE, JSON.stringify(loaded)));
`;

/** What the public API may not name: the host's internals stay behind the kit's own types. */
const HOST_INTERNALS = /@nestjs|Logger\b|VaultService|SealedStore|ExecutionState|PreparedCall|ToolContract|EventStore|ssh2/;

describe('@oncegate/dispatcher-kit as a package: its public API is the committed report', () => {
  beforeAll(async () => {
    await buildPackageOnce(DISPATCHER_KIT);
  }, 120_000);

  it('given the kit as it is now, when API Extractor reads the built declarations of each entry, then each API is exactly its committed report, without findings', { timeout: 120_000 }, async () => {
    const { changed, problems } = await checkApi(DISPATCHER_KIT, { built: true });
    expect(problems).toEqual([]);
    expect(changed, `the public API of @oncegate/dispatcher-kit differs from its reports: run ${UPDATE_API_COMMAND} and commit them`).toEqual([]);
  });

  it('given the reports, then they name none of the host\'s internals: no Nest type, vault, sealed store, contract or execution state', () => {
    for (const entry of DISPATCHER_KIT.entries) {
      const report = readFileSync(join(ROOT, reportPath(DISPATCHER_KIT, entry)), 'utf8');
      expect(report.match(HOST_INTERNALS), reportPath(DISPATCHER_KIT, entry)).toBeNull();
    }
    // The rolled-up declarations a team's compiler reads import nothing but the package itself and Node.
    for (const file of ['index.d.ts', 'testing.d.ts', 'testing-vitest.d.ts']) {
      const declarations = readFileSync(join(ROOT, 'dist/packages/dispatcher-kit/lib', file), 'utf8');
      const imported = [...declarations.matchAll(/from '([^']+)'/g)].map((match) => match[1]);
      expect(imported.filter((name) => !name!.startsWith('@oncegate/dispatcher-kit')), file).toEqual([]);
    }
  });

  it('given a report that lacks one line of the API, when the API is checked, then it differs', { timeout: 120_000 }, async () => {
    const folder = mkdtempSync(join(tmpdir(), 'oncegate-kit-api-'));
    // The main entry's report only: the case above checks every entry against its report.
    const [main] = DISPATCHER_KIT.entries;
    try {
      cpSync(join(ROOT, reportPath(DISPATCHER_KIT, main!)), join(folder, `${main!.report}.api.md`));
      const report = join(folder, 'dispatcher-kit.api.md');
      const line = readFileSync(report, 'utf8')
        .split('\n')
        .find((text) => text.includes('defineChannel'));
      expect(line).toBeDefined();
      writeFileSync(report, readFileSync(report, 'utf8').replace(`${line}\n`, ''));
      expect((await checkApi(DISPATCHER_KIT, { reportFolder: folder, built: true, entries: [main!] })).changed).toEqual([reportPath(DISPATCHER_KIT, main!)]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('a channel built in an empty folder on the kit\'s tarball alone, outside this repository', () => {
  let consumer: string;
  let compiled: Awaited<ReturnType<typeof run>>;
  const node = (args: readonly string[], extra: NodeJS.ProcessEnv = {}) => run(process.execPath, args, { cwd: consumer, env: consumerEnv(extra), timeout: 240_000 });

  beforeAll(async () => {
    // The folder's own TypeScript, Node's types and vitest, at the versions this repository uses.
    consumer = await consumerFolder({
      tarballs: [await packPackage(DISPATCHER_KIT)],
      dependenciesOf: Object.keys(manifestOf(DISPATCHER_KIT).dependencies ?? {}),
      packages: ['typescript', '@types/node', 'vitest'],
      prefix: 'oncegate-kit-consumer-',
    });
    for (const file of ['src', 'test', 'tsconfig.json']) cpSync(join(EXAMPLE, file), join(consumer, file), { recursive: true });
    writeFileSync(join(consumer, 'record-modules.mjs'), RECORD_MODULES);
    // Compiled once, as the team's build does; what the compiler said is the next cases' subject.
    compiled = await node([join(consumer, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json', '--listFiles']);
  }, 240_000);

  afterAll(() => {
    if (consumer !== undefined) rmSync(consumer, { recursive: true, force: true });
  });

  it('given the installed package, then it holds compiled JavaScript and rolled-up declarations, no TypeScript source, and declares what it imports', () => {
    const installed = join(consumer, 'node_modules/@oncegate/dispatcher-kit');
    const files = readdirSync(installed, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(installed, join(entry.parentPath, entry.name)));
    expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'lib/index.js', 'lib/index.d.ts', 'lib/testing.js', 'lib/testing.d.ts', 'lib/testing-vitest.js', 'lib/testing-vitest.d.ts', 'lib/sqlite-writer-worker.js']));
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { name: string; dependencies: Record<string, string> };
    expect(manifest.name).toBe('@oncegate/dispatcher-kit');
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const [name, range] of Object.entries(manifest.dependencies)) expect(range, name).toBe(root.dependencies[name]);
    // ASCII, so that a channel's process keeps the kit's source at one byte a character (tools/ascii-output.mjs).
    const scripts = files.filter((file) => file.endsWith('.js'));
    expect(scripts.filter((file) => /[^\x00-\x7f]/.test(readFileSync(join(installed, file), 'utf8')))).toEqual([]);
  });

  it('given the folder, then nothing in it is a link to this repository', () => {
    expect(inside(ROOT, consumer)).toBe(false);
    expect(symlinksUnder(consumer).filter(({ target }) => !inside(consumer, target))).toEqual([]);
    expect(inside(consumer, realpathSync(join(consumer, 'node_modules/@oncegate/dispatcher-kit')))).toBe(true);
  });

  it('when the folder\'s own tsc compiles the channel and its tests with skipLibCheck off, then it compiles against the package\'s declarations alone', () => {
    expect(compiled.status, `${compiled.stdout}${compiled.stderr}`).toBe(0);
    const files = compiled.stdout.split('\n').filter((line) => line.trim() !== '');
    expect(files).toContain(join(consumer, 'node_modules/@oncegate/dispatcher-kit/lib/index.d.ts'));
    expect(files.filter((file) => !inside(consumer, file))).toEqual([]);
    expect(existsSync(join(consumer, 'dist/src/main.js'))).toBe(true);
  });

  it('when the conformance suite runs under node:test, then every case passes and the credential\'s cases are skipped saying why', { timeout: 240_000 }, async () => {
    const ran = await node(['--test', '--test-reporter=spec', 'dist/test/ledger.node.test.js']);
    expect(ran.status, `${ran.stdout}${ran.stderr}`).toBe(0);
    expect(ran.stdout).toMatch(/ℹ pass 18\n/);
    expect(ran.stdout).toMatch(/ℹ fail 0\n/);
    expect(ran.stdout).toMatch(/ℹ skipped 2\n/);
    expect(ran.stdout).toContain('the ledger is a local file: its tools name no credential');
  });

  it('when the conformance suite runs under the folder\'s vitest, then every case passes', { timeout: 240_000 }, async () => {
    const ran = await node([join(consumer, 'node_modules/vitest/vitest.mjs'), 'run', 'test/ledger.vitest.test.ts'], { NO_COLOR: '1' });
    expect(ran.status, `${ran.stdout}${ran.stderr}`).toBe(0);
    expect(ran.stdout).toMatch(/Tests +18 passed \| 2 skipped \(20\)/);
  });

  it('when `oncegate contracts check --channel` loads the compiled channel, then a mistake in a tool\'s plugin section is named with its file, line and column', { timeout: 60_000 }, async () => {
    const contract = join(consumer, 'tools.yaml');
    writeFileSync(
      contract,
      `version: 1
tools:
  - name: book_payment
    description: Book a payment in the ledger.
    class: irreversible
    channel: ledger
    target: ledger/main
    correlation_window: 10m
    input_schema: { type: object, properties: { amount: { type: integer } }, required: [amount], additionalProperties: false }
    plugin:
      file: ledger.jsonl
      acount: main
`,
    );
    const checked = await run(process.execPath, [join(ROOT, 'bin/oncegate.mjs'), 'contracts', 'check', contract, '--channel', join(consumer, 'dist/src/ledger-channel.js')], { cwd: consumer, env: consumerEnv() });
    expect(checked.status).not.toBe(0);
    const said = `${checked.stdout}${checked.stderr}`;
    expect(said).toContain(`${contract}:12:15 tools[0].plugin.acount: unknown field 'acount'; did you mean 'account'?`);
    expect(said).toContain(`${contract}:11:7 tools[0].plugin.account: missing required field 'account'`);
  });

  it('when `oncegate channels schema` loads the compiled channel, then it prints the JSON Schemas of its section and of its options', { timeout: 60_000 }, async () => {
    const printed = await run(process.execPath, [join(ROOT, 'bin/oncegate.mjs'), 'channels', 'schema', join(consumer, 'dist/src/ledger-channel.js')], { cwd: consumer, env: consumerEnv() });
    expect(printed.status, printed.stderr).toBe(0);
    const schemas = JSON.parse(printed.stdout) as { channel: string; section: { required: string[] }; options: { properties: Record<string, { default?: string }> } };
    expect(schemas.channel).toBe('ledger');
    expect(schemas.section.required).toEqual(['file', 'account']);
    expect(schemas.options.properties['currency']?.default).toBe('EUR');
  });

  describe('as a process of its own beside `oncegate start`', () => {
    let folder: GatewayFolder;
    let gateway: GatewayProcess;
    let channel: ServiceProcess;
    let client: Client;
    let ledger: string;
    const modulesFile = () => join(consumer, 'loaded-modules.json');

    beforeAll(async () => {
      // The channel's options reach it from the configuration every process reads; the gateway leaves them alone.
      folder = await gatewayFolder('http://127.0.0.1:9', { instance_lease: '2s', channels: '{ ledger: { currency: CHF } }' });
      ledger = join(folder.dir, 'ledger.jsonl');
      appendFileSync(
        join(folder.dir, 'tools.yaml'),
        `
  - name: book_payment
    description: Book a payment in the ledger.
    class: irreversible
    channel: ledger
    target: ledger/main
    correlation_window: 10m
    input_schema: { type: object, properties: { amount: { type: integer } }, required: [amount], additionalProperties: false }
    plugin: { file: ${JSON.stringify(ledger)}, account: main, amount: "{{args.amount}}" }
`,
      );
      gateway = await startGatewayProcess(folder);
      // The channel's own entry point, run by Node from the folder: the kit it loads is the installed package.
      channel = await startService(
        { name: 'dispatcher-ledger', command: ['--import', join(consumer, 'record-modules.mjs'), join(consumer, 'dist/src/main.js')] },
        { configFile: folder.configFile, cwd: consumer, env: consumerEnv({ LOADED_MODULES_FILE: modulesFile() }) },
      );
      ({ client } = await connectClient(gateway.url, gateway.devToken));
    }, 120_000);

    afterAll(async () => {
      await client?.close();
      await channel?.stop();
      await gateway?.stop();
      folder?.dispose();
    });

    it('when an agent calls the channel\'s tool through MCP twice with the same intent, then it is booked once, under its execution id, and both calls get that answer', { timeout: 60_000 }, async () => {
      const first = await client.callTool({ name: 'book_payment', arguments: { amount: 42 } });
      const execution = executionOf(first);
      expect(execution.state, textOf(first)).toMatch(/^(completed|delivered)$/);
      expect(textOf(first)).toContain('"booked"');
      const again = await client.callTool({ name: 'book_payment', arguments: { amount: 42 } });
      expect(executionOf(again).id).toBe(execution.id);
      const lines = readFileSync(ledger, 'utf8').split('\n').filter((line) => line !== '');
      expect(lines.map((line) => JSON.parse(line) as { executionId: string; amount: number })).toEqual([expect.objectContaining({ executionId: execution.id, amount: 42, currency: 'CHF' })]);
    });

    it('when the channel\'s process stops, then every module it loaded came from the folder, none from this repository', { timeout: 60_000 }, async () => {
      await channel.stop();
      const loaded = (JSON.parse(readFileSync(modulesFile(), 'utf8')) as string[]).filter((url) => url.startsWith('file:')).map((url) => fileURLToPath(url));
      expect(loaded).toContain(join(consumer, 'node_modules/@oncegate/dispatcher-kit/lib/index.js'));
      expect(loaded.filter((file) => !inside(consumer, realpathSync(file)))).toEqual([]);
    });
  });
});
