import { InvalidArgumentError, Option } from '@commander-js/extra-typings';
import { EXIT_CODES, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { GatewayConfigError, loadGatewayConfig, type GatewayConfig } from '@oncegate/host-config';

/** `--config <file>`, which every command that reads the configuration takes. */
export function configOption() {
  return new Option('--config <file>', 'the configuration file (default: $ONCEGATE_CONFIG, else ./oncegate.yaml)');
}

/** `--json`, for a command that can print what it found as JSON instead of lines. */
export function jsonOption() {
  return new Option('--json', 'print JSON instead of lines');
}

/** A parser for an option or argument that takes a whole number from `min` to `max`. */
export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): (text: string) => number {
  return (text) => {
    const number = Number(text);
    if (text.trim() === '' || !Number.isSafeInteger(number) || number < min || number > max) {
      throw new InvalidArgumentError(max === Number.MAX_SAFE_INTEGER ? `It must be a whole number >= ${min}.` : `It must be a whole number from ${min} to ${max}.`);
    }
    return number;
  };
}

/** Loads the configuration (`--config`, else the default places), or prints every problem and returns the exit code. */
export function configOrExit(options: { readonly config?: string | undefined }, io: CliIo): GatewayConfig | ExitCode {
  const file = options.config;
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
