import { singleToolContract, type ToolContract } from '@oncegate/contracts';

/** Test support: one HTTP tool written as YAML fields, through the real parser. */
export function httpTool(fields: string): ToolContract {
  return singleToolContract({ name: 'test_tool', description: 'A tool for dispatcher tests.', channel: 'http', target: 'test/target' }, fields);
}
