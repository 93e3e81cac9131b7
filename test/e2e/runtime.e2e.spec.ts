import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { executionEvents, executionIds } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { oncegate } from '../support/gateway-process';
import { gatewayScenario } from '../support/scenario';

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
