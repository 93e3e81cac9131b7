import { singleToolContract, type ToolContract } from '@oncegate/contracts';

/** Test support: one SSH tool written as YAML fields, through the real parser. */
export function sshTool(fields: string): ToolContract {
  return singleToolContract({ name: 'test_ssh_tool', description: 'A tool for SSH dispatcher tests.', channel: 'ssh', target: 'test/host' }, fields);
}
