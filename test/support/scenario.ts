import { afterEach, beforeEach } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from './demo-target-process';
import { gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from './gateway-process';

/** One end-to-end world: the demo target, a data folder and a gateway process, fresh for every test. */
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
  beforeEach(async () => {
    scenario.target = await startDemoTargetProcess();
    scenario.folder = await gatewayFolder(scenario.target.url, overrides);
    scenario.gateway = await startGatewayProcess(scenario.folder, env);
  });
  afterEach(async () => {
    await scenario.gateway?.stop();
    await scenario.target?.stop();
    scenario.folder?.dispose();
  });
  return scenario;
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
