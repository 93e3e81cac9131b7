import { parseContractFile } from './parse-contract-file';
import type { ToolContract } from './tool-contract';

/**
 * Parses one tool written as YAML fields (as they would stand under `tools:`), through the real parser, with
 * the given name, channel and target; for tests and examples that need a single contract.
 */
export function singleToolContract(
  base: { readonly name: string; readonly channel: string; readonly target: string; readonly description: string },
  fields: string,
): ToolContract {
  const text = [
    'version: 1',
    'tools:',
    `  - name: ${base.name}`,
    `    description: ${base.description}`,
    `    channel: ${base.channel}`,
    `    target: ${base.target}`,
    '    correlation_window: 5m',
    ...fields
      .trim()
      .split('\n')
      .map((line) => `    ${line}`),
  ].join('\n');
  const tool = parseContractFile(text, 'single-tool.yaml').tools[0];
  if (tool === undefined) throw new Error('no tool parsed');
  return tool;
}
