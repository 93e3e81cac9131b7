import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { executionEvents, executionIds } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { gatewayScenario } from '../support/scenario';

const ENGINES = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }).engines.node;
const REQUIRED_MAJOR = Number(/^>=(\d+)/.exec(ENGINES)![1]);

describe('the runtime the project brings', () => {
  const scenario = gatewayScenario();

  it('given npm scripts, when the gateway starts, then it runs on the Node the engines field names and its native SQLite module writes the journal', async () => {
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
});
