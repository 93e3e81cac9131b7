import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, oncegate, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { readJournal } from '../support/journal';

/** The official MCP conformance suite, run by this process's Node (24, as the suite needs). */
const SUITE = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');
/**
 * Its next release line (0.2.0-alpha.12, pinned), the first with the 2026-07-28 requirements
 * (`--requirements 2026-07-28`); the stable line knows 2025-11-25 only.
 */
const SUITE_2026 = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance-2026/package.json')), 'dist/index.js');

/**
 * The 2026-07-28 requirement scenarios that apply to a gateway: each must pass. `server-stateless` also checks
 * behaviour through diagnostic tools a gateway does not have (the suite says "Not testable" for those); every other
 * check of it must pass. The rest of the requirements need prompts, resources, sampling, elicitation or logging,
 * which the gateway does not serve (as in test/conformance/expected-failures.yaml), or the suite's own tools.
 */
const APPLICABLE_2026 = [
  'server-stateless',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-error',
  'json-schema-2020-12',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
  'http-header-validation',
];
const EXPECTED_FAILURES = fileURLToPath(new URL('../conformance/expected-failures.yaml', import.meta.url));
const TOOLS = fileURLToPath(new URL('../conformance/conformance-tools.yaml', import.meta.url));

/**
 * The server scenarios that apply to a gateway: each must pass with no failure and no warning. Every other
 * scenario of the suite must be listed, with its reason, in test/conformance/expected-failures.yaml.
 */
const APPLICABLE = [
  'server-initialize',
  'ping',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-error',
  'json-schema-2020-12',
  'server-sse-polling',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
];

interface Check {
  readonly id: string;
  readonly status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  readonly errorMessage?: string;
}

/** Runs every server scenario of the suite against `url`; results go to `outDir`, one folder per scenario. */
function runSuite(url: string, outDir: string, args = [SUITE, 'server', '--url', url, '--suite', 'all', '--expected-failures', EXPECTED_FAILURES, '-o', outDir]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += String(chunk)));
  child.stderr.on('data', (chunk) => (output += String(chunk)));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    }),
  );
}

/** The checks of each scenario, from the suite's results folder (`server-<scenario>-<time>/checks.json`). */
function checksByScenario(outDir: string): Map<string, Check[]> {
  const results = new Map<string, Check[]>();
  for (const entry of readdirSync(outDir)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    if (scenario === undefined) continue;
    results.set(scenario, JSON.parse(readFileSync(join(outDir, entry, 'checks.json'), 'utf8')) as Check[]);
  }
  return results;
}

const problems = (checks: readonly Check[]) => checks.filter((check) => check.status === 'FAILURE' || check.status === 'WARNING');

/**
 * The world of a suite run, made before each test and taken down after: the demo target (prepared by `prepare`), the
 * run's contracts, and a gateway process that serves requests without a token as `agent:conformance` (test only: the
 * suite sends no Authorization header).
 */
function conformanceWorld(prefix: string, prepare: (target: DemoTargetProcess) => Promise<void> = async () => undefined) {
  const world = {} as { target: DemoTargetProcess; folder: GatewayFolder; gateway: GatewayProcess; outDir: string };
  beforeEach(async () => {
    world.target = await startDemoTargetProcess();
    await prepare(world.target);
    world.outDir = mkdtempSync(join(tmpdir(), prefix));
    const tools = join(world.outDir, 'tools.yaml');
    writeFileSync(tools, readFileSync(TOOLS, 'utf8').replaceAll('TARGET', world.target.url));
    world.folder = await gatewayFolder(world.target.url, { contracts: tools, testing: '{ unauthenticated_agent: conformance }' });
    world.gateway = await startGatewayProcess(world.folder);
  });
  afterEach(async () => {
    await world.gateway?.stop();
    await world.target?.stop();
    world.folder?.dispose();
    if (world.outDir !== undefined) rmSync(world.outDir, { recursive: true, force: true });
  });
  return world;
}

describe('the official MCP conformance suite against a gateway process', () => {
  const world = conformanceWorld('oncegate-conformance-', async (target) => {
    // server-sse-polling: the suite reads the POST stream of test_reconnection for 10 s, then resumes it with
    // Last-Event-ID and reads for 5 s more. The answer comes at 11 s, so it reaches the suite on the resumed stream.
    await target.control('behave', { match: 'GET /builds/7', action: 'delay', ms: 11_000 });
  });

  it('given a gateway with the test-only unauthenticated agent, when the suite runs every server scenario, then each applicable one passes without a warning and every other one is an expected failure with its reason', async () => {
    const { target, folder, gateway, outDir } = world;
    expect(gateway.output()).toMatch(/"level":"warn".*TEST ONLY: MCP requests without a token are served as agent:conformance/);
    const run = await runSuite(gateway.url, join(outDir, 'results'));
    const results = checksByScenario(join(outDir, 'results'));
    const expectedFailures = (parse(readFileSync(EXPECTED_FAILURES, 'utf8')) as { server: string[] }).server;

    // Every scenario the suite ran is classified, once: a new scenario of a new suite version fails here until it is.
    expect(APPLICABLE.filter((scenario) => expectedFailures.includes(scenario))).toEqual([]);
    expect([...results.keys()].sort()).toEqual([...APPLICABLE, ...expectedFailures].sort());

    // Applicable: no failure and no warning, each named with its check (the exit code only says that something failed).
    const unexpected = APPLICABLE.flatMap((scenario) => problems(results.get(scenario) ?? []).map((check) => `${scenario}: ${check.status} ${check.id}: ${check.errorMessage ?? ''}`));
    expect(unexpected, run.output.slice(run.output.indexOf('=== SUMMARY ==='))).toEqual([]);
    for (const scenario of APPLICABLE) expect(results.get(scenario)!.some((check) => check.status === 'SUCCESS'), scenario).toBe(true);
    // The stream was resumed: the answer came on the GET with Last-Event-ID, after the priming event's id and retry.
    const polling = new Map(results.get('server-sse-polling')!.map((check) => [check.id, check.status]));
    expect(Object.fromEntries(['server-sse-priming-event', 'server-sse-retry-field', 'server-sse-disconnect-resume'].map((id) => [id, polling.get(id)]))).toEqual({
      'server-sse-priming-event': 'SUCCESS',
      'server-sse-retry-field': 'SUCCESS',
      'server-sse-disconnect-resume': 'SUCCESS',
    });

    // Expected failures still fail (an entry that passes is stale), and each says why it does not apply.
    const stale = expectedFailures.filter((scenario) => problems(results.get(scenario) ?? []).length === 0);
    expect(stale).toEqual([]);
    const entries = readFileSync(EXPECTED_FAILURES, 'utf8').split('\n').filter((line) => /^\s+-\s/.test(line));
    expect(entries.filter((line) => !/^\s+- [a-z0-9-]+ # \S.{10,}$/.test(line))).toEqual([]);
    expect(run.output).toMatch(/Baseline check passed: all failures are expected/);
    expect(run.code).toBe(0);

    // The suite's calls were served as the named agent, and the tools were the operator's HTTP contracts.
    const accepted = (await readJournal(folder.dataDir, ['execution-'])).filter((event) => event.type === 'ExecutionAccepted');
    expect(new Set(accepted.map((event) => (event.data as { record: { actor: string } }).record.actor))).toEqual(new Set(['agent:conformance']));
    expect((await target.effects()).requests.map((request) => `${request.method} ${request.path}`).sort()).toEqual([
      'GET /builds/42',
      'GET /builds/7',
      'GET /no-such-endpoint',
    ]);
  }, 90_000);
});

describe('the 2026-07-28 requirements of the conformance suite against a gateway process', () => {
  const world = conformanceWorld('oncegate-conformance-2026-');

  it('given the suite speaking 2026-07-28 (no session), then every applicable requirement passes, as on 2025-11-25', async () => {
    const { folder, gateway, outDir } = world;
    const results = join(outDir, 'results');
    const run = await runSuite(gateway.url, results, [SUITE_2026, 'server', '--url', gateway.url, '--requirements', '2026-07-28', '-o', results]);
    const checks = checksByScenario(results);
    const missing = APPLICABLE_2026.filter((scenario) => !checks.has(scenario));
    expect(missing, run.output.slice(-2000)).toEqual([]);
    const notTestable = (check: Check) => /^Not testable: server does not list the diagnostic tool/.test(check.errorMessage ?? '');
    const unexpected = APPLICABLE_2026.flatMap((scenario) =>
      problems(checks.get(scenario)!)
        .filter((check) => !(scenario === 'server-stateless' && notTestable(check)))
        .map((check) => `${scenario}: ${check.status} ${check.id}: ${check.errorMessage ?? ''}`),
    );
    expect(unexpected).toEqual([]);
    for (const scenario of APPLICABLE_2026) expect(checks.get(scenario)!.some((check) => check.status === 'SUCCESS'), scenario).toBe(true);
    // The stateless scenario's own checks ran: far more passed than its diagnostic-tool checks it could not make.
    expect(checks.get('server-stateless')!.filter((check) => check.status === 'SUCCESS').length).toBeGreaterThan(20);
    // Served without a session: nothing was recorded as one.
    expect((await readJournal(folder.dataDir)).filter((event) => event.type === 'SessionStarted')).toEqual([]);
  }, 90_000);
});

describe('the test-only unauthenticated agent is refused on a gateway others can reach', () => {
  let folder: GatewayFolder | undefined;
  afterEach(() => folder?.dispose());

  it('given testing.unauthenticated_agent on a gateway listening on all interfaces, when it starts, then it refuses with file, line, path and reason and starts nothing', async () => {
    folder = await gatewayFolder('http://127.0.0.1:9', { testing: '{ unauthenticated_agent: conformance }' }, [], { vault: false });
    const config = readFileSync(folder.configFile, 'utf8').replace('host: 127.0.0.1,', 'host: 0.0.0.0, allowed_hosts: [gateway.example.com],');
    writeFileSync(folder.configFile, config);
    const line = config.split('\n').findIndex((text) => text.startsWith('testing:')) + 1;
    const column = config.split('\n')[line - 1]!.indexOf('conformance') + 1;

    const started = await oncegate(folder, ['start']);
    expect(started.code).toBe(1);
    expect(started.stderr).toContain(
      `${folder.configFile}:${line}:${column} testing.unauthenticated_agent: test only, refused: listen.host is 0.0.0.0, not a loopback address: ` +
        'requests without a token would be served to whoever reaches it',
    );
    expect(started.stdout).not.toMatch(/listening/);
    expect(existsSync(folder.dataDir)).toBe(false);
  });
});
