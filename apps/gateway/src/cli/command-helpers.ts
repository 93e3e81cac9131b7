import { isExecutionId, type ExecutionId } from '@oncegate/domain';
import { EventStoreOpenError, EventStoreUnavailableError } from '@oncegate/event-store';
import type { GatewayConfig } from '@oncegate/service-host/config/gateway-config';
import { configOrExit, stringOption, type ParsedArguments } from '@oncegate/service-host/command-args';
import { openDataFolder, type DataFolder } from '@oncegate/service-host/host';
import { EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/service-host/cli-command';

export { configOrExit, parseCommandArgs, stringOption, type ParsedArguments } from '@oncegate/service-host/command-args';

/** Every value of a repeatable string option, in the order given. */
export function stringListOption(parsed: ParsedArguments, name: string): string[] {
  const value = parsed.values[name];
  return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
}

/** The one positional argument of a command about one execution; anything else is a usage error. */
export function executionIdArgument(parsed: ParsedArguments): ExecutionId {
  const [id, ...rest] = parsed.positionals;
  if (id === undefined || rest.length > 0) throw new UsageError('name exactly one execution id (ex_…)');
  if (!isExecutionId(id)) throw new UsageError(`'${id}' is not an execution id (ex_ followed by a ULID)`);
  return id;
}

/**
 * Opens the configuration's data folder and store, or prints why it cannot (a store that will not open or a server
 * that cannot be reached, named without a password) and returns the exit code.
 */
export async function dataFolderOrExit(config: GatewayConfig, io: CliIo, options: { readonly readOnly?: boolean } = {}): Promise<DataFolder | ExitCode> {
  try {
    return await openDataFolder(config, options);
  } catch (error) {
    if (error instanceof EventStoreOpenError || error instanceof EventStoreUnavailableError) {
      io.stderr(`${error.message}\n`);
      return EXIT_CODES.failed;
    }
    throw error;
  }
}

/**
 * Loads the configuration, opens its data folder, runs `work`, and closes the folder whatever happens; a
 * configuration problem is printed and its exit code returned without opening anything.
 */
export async function withDataFolder(
  parsed: ParsedArguments,
  io: CliIo,
  work: (folder: DataFolder, config: GatewayConfig) => Promise<ExitCode>,
  options: { readonly readOnly?: boolean } = {},
): Promise<ExitCode> {
  const config = configOrExit(parsed, io);
  if (typeof config === 'number') return config;
  const folder = await dataFolderOrExit(config, io, options);
  if (typeof folder === 'number') return folder;
  try {
    return await work(folder, config);
  } finally {
    await folder.close();
  }
}

const DECIDER = /^[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,127}$/;
/** Names the gateway gives its own principals; an operator's `--by` may not borrow them. */
const RESERVED_DECIDERS = /^(service|agent|approver):/;

/** Who an operator command records as acting (`--by`, else `fallback`); a bad or borrowed name is a usage error. */
export function byOption(parsed: ParsedArguments, fallback: string): string {
  const by = stringOption(parsed, 'by') ?? fallback;
  if (!DECIDER.test(by)) throw new UsageError(`--by '${by.slice(0, 64)}' is not a name; write e.g. user:alice or operator:alice`);
  if (RESERVED_DECIDERS.test(by)) throw new UsageError(`--by '${by}' names one of the gateway's own principals (service:, agent:, approver:); name a person, e.g. user:alice`);
  return by;
}
