import { readFile } from 'node:fs/promises';
import type { CliIo } from '@oncegate/host-cli';
import { runCli } from '../cli';

/** What a run of the CLI left: its exit code and everything written to stdout and stderr. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliRunOptions {
  /** Laid over this process's environment for the run; a variable given as `undefined` is removed. */
  readonly env?: NodeJS.ProcessEnv;
  /** Standard input, read to its end by a command that takes a value from it. */
  readonly input?: string;
}

/**
 * `oncegate <args>` run in this process through the CLI's entry (`runCli`, what its main runs), for a test whose
 * subject is what a command does and says rather than the process around it: a process start costs about a second
 * of CPU, which a spec that runs dozens of commands pays again and again. What it proves is what a process would:
 * the exit code its main would end with (an error thrown out of a command ends a process with 1 and its stack), and
 * all the run wrote to stdout and stderr, including what anything else (a library's logger) wrote to this process's
 * streams meanwhile. The launcher and the process's own streams are proven by the specs that start the real
 * process (launcher.int.spec.ts, and the runs each command's spec keeps as processes).
 *
 * Runs must not overlap: the environment and the streams are this process's. File paths are taken as given, so they
 * should be absolute (a process of its own would have had a working directory of its own).
 */
export async function runCliHere(args: readonly string[], options: CliRunOptions = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    readFile: (path) => readFile(path, 'utf8'),
    readStdin: async () => options.input ?? '',
  };
  const restoreEnv = overlayEnv(options.env ?? {});
  const writes = { stdout: process.stdout.write, stderr: process.stderr.write };
  process.stdout.write = ((chunk: string | Uint8Array) => ((stdout += String(chunk)), true)) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => ((stderr += String(chunk)), true)) as typeof process.stderr.write;
  try {
    return { code: await runCli(args, io), stdout, stderr };
  } catch (error) {
    return { code: 1, stdout, stderr: `${stderr}${(error as Error).stack ?? String(error)}\n` };
  } finally {
    process.stdout.write = writes.stdout;
    process.stderr.write = writes.stderr;
    restoreEnv();
  }
}

/** Sets `env` in process.env and returns what puts the previous values back. */
function overlayEnv(env: NodeJS.ProcessEnv): () => void {
  const previous = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  const apply = (values: NodeJS.ProcessEnv) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(env);
  return () => apply(previous);
}
