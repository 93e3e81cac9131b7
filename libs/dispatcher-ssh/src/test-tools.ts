import { parseContractFile } from '@oncegate/contracts';
import type { ToolContract } from '@oncegate/contracts';

/** Test support: parses one SSH tool written as YAML (indented under `tools:` here), through the real parser. */
export function sshTool(fields: string): ToolContract {
  const text = [
    'version: 1',
    'tools:',
    '  - name: test_ssh_tool',
    '    description: A tool for SSH dispatcher tests.',
    '    channel: ssh',
    '    target: test/host',
    '    correlation_window: 5m',
    ...fields
      .trim()
      .split('\n')
      .map((line) => `    ${line}`),
  ].join('\n');
  const tool = parseContractFile(text, 'test-tools.yaml').tools[0];
  if (tool === undefined) throw new Error('no tool parsed');
  return tool;
}
