import type { CliCommand } from '@oncegate/service-host/cli-command';
import {
  approvalsApproveCommand,
  approvalsDenyCommand,
  approvalsListCommand,
  approvalsShowCommand,
  approversAddCommand,
  approversListCommand,
  approversRevokeCommand,
} from './commands/approval-commands';
import { contractsCheckCommand } from './commands/contracts-check';
import { agentsAddCommand, agentsListCommand, agentsRevokeCommand, serveCommand, startCommand, stdioCommand } from './commands/gateway-commands';
import { auditVerifyCommand, initCommand, journalExportCommand } from './commands/journal-commands';
import { investigateCommand, projectionRunCommand } from './commands/analyst-commands';
import { parkedListCommand, parkedReplayCommand, parkedShowCommand } from './commands/parked-commands';
import { runsEndCommand, runsListCommand, runsShowCommand } from './commands/run-commands';
import { reviewListCommand, reviewResolveCommand, reviewShowCommand } from './commands/review-commands';
import { VAULT_COMMANDS } from './commands/vault-commands';

/** Every command of the CLI. Adding one here is all the dispatcher needs. */
export const COMMANDS: readonly CliCommand[] = [
  initCommand,
  startCommand,
  serveCommand,
  stdioCommand,
  agentsAddCommand,
  agentsListCommand,
  agentsRevokeCommand,
  ...VAULT_COMMANDS,
  contractsCheckCommand,
  journalExportCommand,
  auditVerifyCommand,
  investigateCommand,
  projectionRunCommand,
  reviewListCommand,
  reviewShowCommand,
  reviewResolveCommand,
  approvalsListCommand,
  approvalsShowCommand,
  approvalsApproveCommand,
  approvalsDenyCommand,
  approversAddCommand,
  approversListCommand,
  approversRevokeCommand,
  runsListCommand,
  runsShowCommand,
  runsEndCommand,
  parkedListCommand,
  parkedShowCommand,
  parkedReplayCommand,
];
