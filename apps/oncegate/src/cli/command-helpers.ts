import { userInfo } from 'node:os';
import { InvalidArgumentError, Option } from '@commander-js/extra-typings';
import { isExecutionId, type ExecutionId } from '@oncegate/domain';
import { EventStoreOpenError, EventStoreUnavailableError } from '@oncegate/event-store';
import type { GatewayConfig } from '@oncegate/host-config';
import { EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { configOrExit, openDataFolder, type DataFolder } from '@oncegate/service-host';

export { configOption, configOrExit, jsonOption, wholeNumber } from '@oncegate/service-host';

/** Parses an `<execution-id>` argument. */
export function executionId(text: string): ExecutionId {
  if (!isExecutionId(text)) throw new InvalidArgumentError('An execution id is ex_ followed by a ULID.');
  return text;
}

/** `--reason <text>`, which a decision must give: recorded with it, so it must say something. */
export function reasonOption(what = 'why, recorded with the decision') {
  return new Option('--reason <text>', what).makeOptionMandatory();
}

/** The `--reason` given, trimmed; an empty one is a usage error. */
export function reasonOf(options: { readonly reason: string }): string {
  const reason = options.reason.trim();
  if (reason === '') throw new UsageError('--reason "..." is required: say why');
  return reason;
}

/** `--by <name>`: who an operator command records as acting, `fallback` unless given. */
export function byOption(fallback: string) {
  return new Option('--by <name>', 'who is recorded as acting, e.g. user:alice').default(fallback);
}

/**
 * `--by <name>` whose fallback is the login of whoever runs the command (`operator:<login>`): worked out only when
 * the command runs, with `actingAs`.
 */
export function byLoginOption(prefix: 'operator' | 'user') {
  return new Option('--by <name>', `who is recorded as acting, e.g. user:alice (default: ${prefix}:<your login name>)`);
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
  options: { readonly config?: string | undefined },
  io: CliIo,
  work: (folder: DataFolder, config: GatewayConfig) => Promise<ExitCode>,
  folderOptions: { readonly readOnly?: boolean } = {},
): Promise<ExitCode> {
  const config = configOrExit(options, io);
  if (typeof config === 'number') return config;
  const folder = await dataFolderOrExit(config, io, folderOptions);
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

/**
 * Who an operator command records as acting: `--by`, else `<prefix>:<login>` of whoever runs it; a bad or borrowed
 * name is a usage error.
 */
export function actingAs(given: string | undefined, loginPrefix: 'operator' | 'user' = 'operator'): string {
  const by = given ?? `${loginPrefix}:${userInfo().username}`;
  if (!DECIDER.test(by)) throw new UsageError(`--by '${by.slice(0, 64)}' is not a name; write e.g. user:alice or operator:alice`);
  if (RESERVED_DECIDERS.test(by)) throw new UsageError(`--by '${by}' names one of the gateway's own principals (service:, agent:, approver:); name a person, e.g. user:alice`);
  return by;
}
