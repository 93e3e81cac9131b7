import { closestMatch } from '@oncegate/contracts';
import { EXIT_CODES, UsageError, type CliCommand, type CliIo, type ExitCode } from '@oncegate/service-host/cli-command';
import { COMMANDS } from './commands';

const HELP_FLAGS = ['--help', '-h', 'help'];

function overview(commands: readonly CliCommand[], group?: string): string {
  const shown = commands.filter((command) => group === undefined || command.group === group);
  const title = (command: CliCommand) => `${command.group} ${command.name}`.trim();
  const width = Math.max(...shown.map((command) => title(command).length));
  const lines = shown.map((command) => `  ${title(command).padEnd(width)}  ${command.summary}`);
  return [
    `Usage: oncegate ${group ?? '<group>'} <command> [args]`,
    '',
    'Commands:',
    ...lines,
    '',
    "Run 'oncegate <group> <command> --help' for the help of one command.",
    '',
  ].join('\n');
}

function closest(word: string, candidates: readonly string[]): string {
  const match = closestMatch(word, candidates) ?? candidates.find((candidate) => candidate.startsWith(word));
  return match === undefined ? '' : ` — did you mean '${match}'?`;
}

/**
 * Runs `oncegate <group> <command> [args]` and returns the exit code: `--help` anywhere before the
 * command's own arguments prints help; an unknown group or command is a usage error (exit 2).
 */
export async function runCli(argv: readonly string[], io: CliIo, commands: readonly CliCommand[] = COMMANDS): Promise<ExitCode> {
  const [group, name, ...args] = argv;
  const groups = [...new Set(commands.map((command) => command.group))];
  const usageError = (message: string, help: string): ExitCode => {
    io.stderr(`oncegate: ${message}\n${help}\n`);
    return EXIT_CODES.usage;
  };

  if (group === undefined) {
    io.stderr(overview(commands));
    return EXIT_CODES.usage;
  }
  if (HELP_FLAGS.includes(group)) {
    io.stdout(overview(commands));
    return EXIT_CODES.ok;
  }
  if (!groups.includes(group)) {
    return usageError(`unknown command '${group}'${closest(group, groups)}`, "Run 'oncegate --help' for the list of commands.");
  }
  // A command without a second word (`oncegate start`) takes everything after its name as arguments.
  const single = commands.find((candidate) => candidate.group === group && candidate.name === '');
  if (single !== undefined) return runCommand(single, argv.slice(1), io, usageError);
  if (name === undefined || HELP_FLAGS.includes(name)) {
    (name === undefined ? io.stderr : io.stdout)(overview(commands, group));
    return name === undefined ? EXIT_CODES.usage : EXIT_CODES.ok;
  }
  const command = commands.find((candidate) => candidate.group === group && candidate.name === name);
  if (command === undefined) {
    const names = commands.filter((candidate) => candidate.group === group).map((candidate) => candidate.name);
    return usageError(`unknown command '${group} ${name}'${closest(name, names)}`, `Run 'oncegate ${group} --help' for its commands.`);
  }
  return runCommand(command, args, io, usageError);
}

async function runCommand(
  command: CliCommand,
  args: readonly string[],
  io: CliIo,
  usageError: (message: string, help: string) => ExitCode,
): Promise<ExitCode> {
  const title = `${command.group} ${command.name}`.trim();
  if (args.includes('--help') || args.includes('-h')) {
    io.stdout(`${command.usage}\n`);
    return EXIT_CODES.ok;
  }
  try {
    return await command.run(args, io);
  } catch (error) {
    if (error instanceof UsageError) {
      return usageError(`${title}: ${error.message}`, `Run 'oncegate ${title} --help' for its usage.`);
    }
    throw error;
  }
}
