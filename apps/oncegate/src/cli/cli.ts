import { Command, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { runProgram, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { COMMANDS, type CliCommand } from './commands';

/** The `oncegate` program with `commands`, each loaded and made afresh for one run. */
export async function oncegateProgram(commands: readonly CliCommand[] = COMMANDS): Promise<CommandUnknownOpts> {
  const program = new Command('oncegate')
    .description('MCP gateway that gives every side-effecting tool call an execution identity.')
    .addHelpText('after', "\nRun 'oncegate <command> --help' for its arguments and options.");
  const made = await Promise.all(commands.map((command) => command.load()));
  for (const make of made) program.addCommand(make());
  return program;
}

/**
 * Runs `oncegate <command> [args]` and returns the exit code: the command's own, 0 for help asked for, 2 for a
 * mistake on the command line or a group named without its command. Only the named command's module is loaded; the
 * program's own help, `help <command>` and a name the program does not know load them all.
 */
export async function runCli(argv: readonly string[], io: CliIo, commands: readonly CliCommand[] = COMMANDS): Promise<ExitCode> {
  const named = commands.filter((command) => command.name === argv[0]);
  return runProgram(await oncegateProgram(named.length > 0 ? named : commands), argv, io);
}
