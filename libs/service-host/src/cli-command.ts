import { readFile } from 'node:fs/promises';

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
