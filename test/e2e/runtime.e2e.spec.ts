import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startDemoTargetProcess } from '../support/demo-target-process';
import { executionEvents, executionIds } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { gatewayFolder, oncegate, startGatewayProcess } from '../support/gateway-process';
import { gatewayScenario } from '../support/scenario';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const ENGINES = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }).engines.node;
const REQUIRED_MAJOR = Number(/^>=(\d+)/.exec(ENGINES)![1]);

/** The machine's own `node` (the first on the PATH outside node_modules), with its major version. */
function systemNode(): { path: string; major: number } | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir.includes('node_modules')) continue;
    const path = join(dir, 'node');
    if (!existsSync(path)) continue;
    const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
    return { path, major: Number(/^v(\d+)/.exec(version)?.[1] ?? 0) };
  }
  return undefined;
}
const SYSTEM_NODE = systemNode();
const OLDER_SYSTEM_NODE = SYSTEM_NODE !== undefined && SYSTEM_NODE.major < REQUIRED_MAJOR ? SYSTEM_NODE : undefined;

describe('the runtime the project brings', () => {
  const scenario = gatewayScenario();

  it('given npm scripts, when the gateway starts, then it runs on the Node the engines field names and its built-in SQLite writes the journal', async () => {
    const runtime = /runtime:\s+Node (v(\d+)\.\d+\.\d+)/.exec(scenario.gateway.output());
    expect(runtime, scenario.gateway.output()).not.toBeNull();
    expect(Number(runtime![2])).toBeGreaterThanOrEqual(REQUIRED_MAJOR);
    // The tests themselves run on the same Node (npm puts the project's node first on the PATH).
    expect(runtime![1]).toBe(process.version);

    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const answer = await client.callTool({ name: 'set_config', arguments: { name: 'runtime.check', value: process.version } });
    await client.close();
    expect(answer.isError).toBe(false);
    const [executionId] = await executionIds(scenario.folder.dataDir);
    expect(await executionEvents(scenario.folder.dataDir, executionId!)).toContain('OutcomeObserved');
  });

  it("given the machine's own older Node, when it starts bin/oncegate.mjs, then the command runs on the project's Node", async (ctx) => {
    if (OLDER_SYSTEM_NODE === undefined) {
      ctx.skip(SYSTEM_NODE ? `the system Node is already ${REQUIRED_MAJOR} or later: there is nothing to hand over` : 'no node on the PATH outside node_modules');
    }
    const issued = await oncegate(scenario.folder, ['agents', 'add', 'launcher-check']);
    expect(issued.code, issued.stderr).toBe(0);
    const listed = spawnSync(OLDER_SYSTEM_NODE!.path, ['bin/oncegate.mjs', 'agents', 'list', '--config', scenario.folder.configFile], {
      cwd: new URL('../../', import.meta.url),
      encoding: 'utf8',
    });
    // The agent directory reads the SQLite journal: Node 20 has no node:sqlite, so only the project's Node can list it.
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/agent:launcher-check\t/);
  });
});

/**
 * What a production installation holds: the launcher, the compiled apps, package.json, and only the packages
 * package-lock.json does not mark as development dependencies (linked from this checkout's node_modules): no
 * tsx, no esbuild, no TypeScript.
 */
function productionInstallation(): { dir: string; launcher: string; dispose(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'oncegate-production-'));
  cpSync(join(ROOT, 'bin'), join(dir, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
  copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (entry.dev === true || !/^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) || !existsSync(join(ROOT, path))) continue;
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    symlinkSync(join(ROOT, path), join(dir, path));
  }
  return { dir, launcher: join(dir, 'bin', 'oncegate.mjs'), dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

describe('the compiled gateway', () => {
  it('given only production dependencies, when the compiled gateway serves a call and its journal is verified by worker threads, then no TypeScript tooling is needed', async () => {
    const installation = productionInstallation();
    const target = await startDemoTargetProcess();
    const folder = await gatewayFolder(target.url);
    try {
      for (const tool of ['tsx', 'esbuild', 'typescript', 'vitest', 'vite', 'preact']) expect(existsSync(join(installation.dir, 'node_modules', tool)), tool).toBe(false);

      const gateway = await startGatewayProcess(folder, {}, { launcher: installation.launcher });
      try {
        const { client } = await connectClient(gateway.url, gateway.devToken);
        const answer = await client.callTool({ name: 'set_config', arguments: { name: 'runtime.compiled', value: 'yes' } });
        await client.close();
        expect(answer.isError, JSON.stringify(answer)).toBe(false);
        // The console is served from the built files in dist/, with no front-end package installed.
        const page = await fetch(new URL('/console/', gateway.url));
        expect(page.status).toBe(200);
        const html = await page.text();
        const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((match) => match[1]!);
        expect(assets.length).toBeGreaterThanOrEqual(2);
        for (const asset of assets) expect((await fetch(new URL(asset, gateway.url))).status, asset).toBe(200);
      } finally {
        await gateway.stop();
      }
      expect((await target.effects()).byEndpoint['PUT /config/:name']).toBe(1);

      const run = (args: string[]) => oncegate(folder, args, {}, undefined, {}, installation.launcher);
      const exported = await run(['journal', 'export']);
      expect(exported.code, exported.stderr).toBe(0);
      const file = join(folder.dir, 'journal.ndjson');
      writeFileSync(file, exported.stdout);
      const publicKey = join(folder.dataDir, 'keys', 'journal-seal.pub.pem');
      // Two worker threads load the compiled verify-worker.js beside the CLI.
      const verified = await run(['audit', 'verify', file, '--public-key', publicKey, '--workers', '2']);
      expect(verified.code, verified.stderr).toBe(0);
      expect(verified.stdout).toMatch(/^OK: \d+ events/);
    } finally {
      folder.dispose();
      await target.stop();
      installation.dispose();
    }
  });
});
