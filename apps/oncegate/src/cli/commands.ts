import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { approvalsCommand, approversCommand } from './commands/approval-commands';
import { channelsCommand } from './commands/channel-commands';
import { contractsCommand } from './commands/contracts-check';
import { agentsCommand, serveCommand, startCommand, stdioCommand } from './commands/gateway-commands';
import { auditCommand, initCommand, journalCommand } from './commands/journal-commands';
import { investigateCommand, projectionCommand } from './commands/analyst-commands';
import { executionsCommand } from './commands/executions-commands';
import { parkedCommand } from './commands/parked-commands';
import { runsCommand } from './commands/run-commands';
import { reviewCommand } from './commands/review-commands';
import { upstreamCommand } from './commands/upstream-commands';
import { vaultCommand } from './commands/vault-commands';

/**
 * Every command of the CLI, in the order the help lists them; each makes its commander command afresh for one run.
 * Adding one here is all the program needs.
 */
export const COMMANDS: readonly (() => CommandUnknownOpts)[] = [
  initCommand,
  startCommand,
  serveCommand,
  stdioCommand,
  agentsCommand,
  vaultCommand,
  contractsCommand,
  upstreamCommand,
  channelsCommand,
  journalCommand,
  auditCommand,
  investigateCommand,
  executionsCommand,
  projectionCommand,
  reviewCommand,
  approvalsCommand,
  approversCommand,
  runsCommand,
  parkedCommand,
];
