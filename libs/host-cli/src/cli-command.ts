import { readFile } from 'node:fs/promises';
import { CommanderError, Help, type CommandUnknownOpts } from '@commander-js/extra-typings';

/** What a command may touch: output streams and file reading. Tests pass in-memory ones. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Reads a whole UTF-8 text file; rejects with the file system's error. */
  readFile(path: string): Promise<string>;
  /** Reads standard input to its end (a secret piped in); absent where there is no standard input. */
  readStdin?(): Promise<string>;
}

/** The process's own streams and files, for a command or a service run from a main. */
export const PROCESS_IO: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  readFile: (path) => readFile(path, 'utf8'),
  async readStdin() {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
};

/** Process exit codes of every command. */
export const EXIT_CODES = {
  ok: 0,
  /** The command ran and found problems (invalid contract, unreadable file). */
  failed: 1,
  /** The command line itself was wrong: unknown command or option, missing argument. */
  usage: 2,
} as const;

export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/** A mistake on the command line that only the command's action can see: reported as a parse mistake is, exit code 2. */
export class UsageError extends Error {
  readonly code = 'usage' as const;

  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** One run of a program: where its output goes, and the exit code its command's action returned. */
interface Invocation {
  readonly io: CliIo;
  exitCode: ExitCode;
}

const invocations = new WeakMap<CommandUnknownOpts, Invocation>();

function rootOf(command: CommandUnknownOpts): CommandUnknownOpts {
  let root = command;
  while (root.parent !== null) root = root.parent;
  return root;
}

/**
 * A command's action for commander's `.action()`: `work` gets the run's io, then the command's arguments and
 * options as commander passes them, and returns the exit code. A `UsageError` it throws is reported as commander
 * reports its own parse mistakes (one line, the command's usage, exit 2).
 */
export function action<A extends unknown[]>(work: (io: CliIo, ...args: A) => Promise<ExitCode>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const command = args.at(-1) as CommandUnknownOpts;
    const invocation = invocations.get(rootOf(command));
    if (invocation === undefined) throw new Error(`'${command.name()}' was run without runProgram`);
    try {
      invocation.exitCode = await work(invocation.io, ...args);
    } catch (error) {
      if (error instanceof UsageError) command.error(error.message, { exitCode: EXIT_CODES.usage, code: 'oncegate.usage' });
      throw error;
    }
  };
}

/** `oncegate approvals approve` → `approvals approve`; the program itself → ''. */
function pathOf(command: CommandUnknownOpts): string {
  const names: string[] = [];
  for (let at: CommandUnknownOpts | null = command; at?.parent; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/**
 * Commander's message as one line in our words: `error: ` dropped, its "(Did you mean --x?)" line folded in. What
 * the command did not ask for is not repeated: a value after `--unknown=` or an argument too many may be a secret
 * typed in the wrong place, and the terminal and the logs must not get it.
 */
function usageReason(message: string): string {
  const [first = '', ...rest] = message.trim().replace(/^error: /, '').split('\n');
  const suggestion = /^\(Did you mean (one of )?(.+)\?\)$/.exec(rest.join(' '));
  const reason = first
    .replace(/^(unknown option '-[^=']*)=.*$/, "$1=…'")
    .replace(/^(too many arguments(?: for '[^']+')?\. Expected \d+ arguments? but got \d+):.*$/, '$1.');
  if (suggestion === null) return reason;
  const names = suggestion[2]!.split(', ').map((name) => `'${name}'`);
  return `${reason} — did you mean ${suggestion[1] ? 'one of ' : ''}${names.join(', ')}?`;
}

/**
 * How the help reads: the program's own lists every command, `agents add` as well as `start`, so that one `--help`
 * shows all there is (a group's lists its own commands, as commander does); a command described in one line, its
 * summary, shows that line in its own help too.
 */
function helpOf(program: CommandUnknownOpts): Partial<Help> {
  const leaves = (command: CommandUnknownOpts): CommandUnknownOpts[] => (command.commands.length === 0 ? [command] : command.commands.flatMap(leaves));
  return {
    commandDescription: (command) => command.description() || command.summary(),
    formatHelp(command, helper) {
      if (command !== program) return Help.prototype.formatHelp.call(helper, command, helper);
      const flat: Help = Object.create(helper);
      flat.visibleCommands = () => program.commands.flatMap(leaves);
      flat.subcommandTerm = pathOf;
      return Help.prototype.formatHelp.call(flat, command, flat);
    },
  };
}

/** Every command of the program writes to `io`, throws instead of exiting, and words its mistakes one way. */
function configure(command: CommandUnknownOpts, io: CliIo, program: CommandUnknownOpts, help: Partial<Help>): void {
  const programName = program.name();
  command
    .exitOverride()
    .configureHelp(help)
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (text) => io.stdout(text),
      writeErr: (text) => io.stderr(text),
      outputError: (message, write) => {
        const path = pathOf(command);
        const usage = command.createHelp().commandUsage(command);
        const more = command.commands.length > 0 ? 'its commands' : 'its options';
        write(`${programName}: ${path === '' ? '' : `${path}: `}${usageReason(message)}\nUsage: ${usage}\nRun '${`${programName} ${path}`.trim()} --help' for ${more}.\n`);
      },
    });
  // A group does nothing of its own: its command is not optional, whatever commander's default usage says.
  if (command.commands.length > 0) command.usage('<command> [options]');
  for (const sub of command.commands) configure(sub, io, program, help);
}

/**
 * Runs `program` on `argv` and returns the exit code: the action's own, 0 for help asked for, 2 for a mistake on
 * the command line (said on stderr in one line with the command's usage) and for a group named without its command
 * (its help on stderr). Anything else an action throws is not a usage mistake and is thrown on.
 */
export async function runProgram(program: CommandUnknownOpts, argv: readonly string[], io: CliIo): Promise<ExitCode> {
  const invocation: Invocation = { io, exitCode: EXIT_CODES.ok };
  invocations.set(program, invocation);
  configure(program, io, program, helpOf(program));
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return invocation.exitCode;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return error.exitCode === 0 ? EXIT_CODES.ok : EXIT_CODES.usage;
  }
}

/** How long a process that has finished may still be held by what a library left behind before it ends anyway. */
const LINGER_MS = 2_000;

/**
 * Ends a process's main with `code`. The process ends when nothing holds it any more; if something a library left
 * behind still does (a Kafka client's retry timer after a broker came back, a socket), it ends `LINGER_MS` later
 * anyway, saying so: a command or a service that has finished must not stay running until it is killed.
 */
export function exitWhenDone(code: ExitCode): void {
  process.exitCode = code;
  setTimeout(() => {
    process.stderr.write(`still held ${LINGER_MS / 1000} s after it finished; exiting\n`);
    process.exit(code);
  }, LINGER_MS).unref();
}
