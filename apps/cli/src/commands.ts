import type { CliCommand } from './cli-command';
import { contractsCheckCommand } from './commands/contracts-check';

/** Every command of the CLI. Adding one here is all the dispatcher needs. */
export const COMMANDS: readonly CliCommand[] = [contractsCheckCommand];
