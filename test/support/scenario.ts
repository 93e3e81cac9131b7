import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from './demo-target-process';
import { gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from './gateway-process';

/** One end-to-end world: the demo target, a data folder and a gateway process. */
export interface Scenario {
  target: DemoTargetProcess;
  folder: GatewayFolder;
  /** Replace it to restart the gateway on the same folder (`await startGatewayProcess(scenario.folder)`). */
  gateway: GatewayProcess;
}

/**
 * Registers the set-up and tear-down of a fresh scenario around each test of the calling `describe`; `env` is
 * added to the gateway process's environment.
 */
export function gatewayScenario(overrides: Record<string, string> = {}, env: NodeJS.ProcessEnv = {}): Scenario {
  const scenario = {} as Scenario;
  beforeEach(() => setUp(scenario, overrides, env));
  afterEach(() => tearDown(scenario));
  return scenario;
}

/**
 * One scenario for all the tests of the calling `describe`, set up before the first and torn down after the last:
 * for tests that change nothing another of them could see (requests refused, reads), which would otherwise pay a
 * target's and a gateway's start each. Their checks that nothing was accepted or sent hold for all of them together.
 */
export function sharedGatewayScenario(overrides: Record<string, string> = {}, env: NodeJS.ProcessEnv = {}): Scenario {
  const scenario = {} as Scenario;
  beforeAll(() => setUp(scenario, overrides, env));
  afterAll(() => tearDown(scenario));
  return scenario;
}

async function setUp(scenario: Scenario, overrides: Record<string, string>, env: NodeJS.ProcessEnv): Promise<void> {
  scenario.target = await startDemoTargetProcess();
  scenario.folder = await gatewayFolder(scenario.target.url, overrides);
  scenario.gateway = await startGatewayProcess(scenario.folder, env);
}

async function tearDown(scenario: Partial<Scenario>): Promise<void> {
  await scenario.gateway?.stop();
  await scenario.target?.stop();
  scenario.folder?.dispose();
}

export interface ExecutionInfo {
  readonly id: string;
  readonly state: string;
  readonly attached: boolean;
  readonly replayed: boolean;
  readonly attempts: number;
}

/** The execution facts every tool result carries (docs/design.md section 9). */
export function executionOf(result: unknown): ExecutionInfo {
  return (result as { structuredContent: { execution: ExecutionInfo } }).structuredContent.execution;
}

export function textOf(result: unknown): string {
  return (result as { content: Array<{ text: string }> }).content[0]!.text;
}
