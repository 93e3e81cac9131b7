/** What a command may touch: output streams and file reading. Tests pass in-memory ones. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Reads a whole UTF-8 text file; rejects with the file system's error. */
  readFile(path: string): Promise<string>;
  /** Reads standard input to its end (a secret piped in); absent where there is no standard input. */
  readStdin?(): Promise<string>;
}

/** Process exit codes of every command. */
export const EXIT_CODES = {
  ok: 0,
  /** The command ran and found problems (invalid contract, unreadable file). */
  failed: 1,
  /** The command line itself was wrong: unknown command or option, missing argument. */
  usage: 2,
} as const;

export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/** One `oncegate <group> <command>`; its `run` gets the arguments after the command name. */
export interface CliCommand {
  readonly group: string;
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Full help text, shown by `--help`. */
  readonly usage: string;
  run(args: readonly string[], io: CliIo): Promise<ExitCode>;
}

/** A mistake on the command line: printed with the usage hint, exit code 2. */
export class UsageError extends Error {
  readonly code = 'usage' as const;

  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
