import { parseArgs } from 'node:util';
import { EXIT_CODES, UsageError, type CliIo, type ExitCode } from './cli-command';
import { GatewayConfigError, type GatewayConfig } from './config/gateway-config';
import { loadGatewayConfig } from './config/load-config';

export interface ParsedArguments {
  /** A `multiple: true` option gives the list of its values. */
  readonly values: Readonly<Record<string, string | boolean | string[] | undefined>>;
  readonly positionals: readonly string[];
}

/** Parses a command's arguments (every command takes `--config <file>`); a mistake is a usage error. */
export function parseCommandArgs(
  args: readonly string[],
  options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {},
): ParsedArguments {
  try {
    return parseArgs({ args: [...args], options: { config: { type: 'string' }, ...options }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

export function stringOption(parsed: ParsedArguments, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** Loads the configuration, or prints every problem and returns the exit code. */
export function configOrExit(parsed: ParsedArguments, io: CliIo): GatewayConfig | ExitCode {
  const file = stringOption(parsed, 'config');
  try {
    return loadGatewayConfig({ ...(file ? { file } : {}) });
  } catch (error) {
    if (error instanceof GatewayConfigError) {
      io.stderr(`${error.message}\n`);
      return EXIT_CODES.failed;
    }
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      io.stderr(`configuration file not found: ${(error as NodeJS.ErrnoException).path}\n`);
      return EXIT_CODES.failed;
    }
    throw error;
  }
}

