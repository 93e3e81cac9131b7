import { Command, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { runProgram, type CliIo, type ExitCode } from '@oncegate/service-host';
import { COMMANDS } from './commands';

/** The `oncegate` program with `commands`, made afresh for one run. */
export function oncegateProgram(commands: readonly (() => CommandUnknownOpts)[] = COMMANDS): CommandUnknownOpts {
  const program = new Command('oncegate')
    .description('MCP gateway that gives every side-effecting tool call an execution identity.')
    .addHelpText('after', "\nRun 'oncegate <command> --help' for its arguments and options.");
  for (const command of commands) program.addCommand(command());
  return program;
}

/**
 * Runs `oncegate <command> [args]` and returns the exit code: the command's own, 0 for help asked for, 2 for a
 * mistake on the command line or a group named without its command.
 */
export function runCli(argv: readonly string[], io: CliIo, commands: readonly (() => CommandUnknownOpts)[] = COMMANDS): Promise<ExitCode> {
  return runProgram(oncegateProgram(commands), argv, io);
}
