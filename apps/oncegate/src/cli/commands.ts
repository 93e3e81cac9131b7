import type { CommandUnknownOpts } from '@commander-js/extra-typings';

/** A command of the CLI: its name, and its module loaded on demand for the commander command it makes afresh for one run. */
export interface CliCommand {
  readonly name: string;
  readonly load: () => Promise<() => CommandUnknownOpts>;
}

/**
 * Every command of the CLI, in the order the help lists them. A run loads the module of the command it names and no
 * other (the whole list for the program's own help or a name it does not know), so a command starts without evaluating
 * the code of every other one. Adding one here is all the program needs.
 */
export const COMMANDS: readonly CliCommand[] = [
  { name: 'init', load: async () => (await import('./commands/journal-commands')).initCommand },
  { name: 'start', load: async () => (await import('./commands/gateway-commands')).startCommand },
  { name: 'serve', load: async () => (await import('./commands/gateway-commands')).serveCommand },
  { name: 'stdio', load: async () => (await import('./commands/gateway-commands')).stdioCommand },
  { name: 'agents', load: async () => (await import('./commands/gateway-commands')).agentsCommand },
  { name: 'vault', load: async () => (await import('./commands/vault-commands')).vaultCommand },
  { name: 'contracts', load: async () => (await import('./commands/contracts-check')).contractsCommand },
  { name: 'upstream', load: async () => (await import('./commands/upstream-commands')).upstreamCommand },
  { name: 'channels', load: async () => (await import('./commands/channel-commands')).channelsCommand },
  { name: 'journal', load: async () => (await import('./commands/journal-commands')).journalCommand },
  { name: 'audit', load: async () => (await import('./commands/journal-commands')).auditCommand },
  { name: 'investigate', load: async () => (await import('./commands/analyst-commands')).investigateCommand },
  { name: 'executions', load: async () => (await import('./commands/executions-commands')).executionsCommand },
  { name: 'projection', load: async () => (await import('./commands/analyst-commands')).projectionCommand },
  { name: 'review', load: async () => (await import('./commands/review-commands')).reviewCommand },
  { name: 'approvals', load: async () => (await import('./commands/approval-commands')).approvalsCommand },
  { name: 'approvers', load: async () => (await import('./commands/approval-commands')).approversCommand },
  { name: 'runs', load: async () => (await import('./commands/run-commands')).runsCommand },
  { name: 'parked', load: async () => (await import('./commands/parked-commands')).parkedCommand },
];
