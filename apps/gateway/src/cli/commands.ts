import type { CliCommand } from './cli-command';
import { contractsCheckCommand } from './commands/contracts-check';
import { agentsAddCommand, agentsListCommand, agentsRevokeCommand, startCommand, stdioCommand } from './commands/gateway-commands';

/** Every command of the CLI. Adding one here is all the dispatcher needs. */
export const COMMANDS: readonly CliCommand[] = [
  startCommand,
  stdioCommand,
  agentsAddCommand,
  agentsListCommand,
  agentsRevokeCommand,
  contractsCheckCommand,
];
