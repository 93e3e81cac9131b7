import { ContractValidationError } from '@oncegate/contracts';
import { EventStoreOpenError, EventStoreUnavailableError } from '@oncegate/event-store';
import { Command } from '@commander-js/extra-typings';
import { action, EXIT_CODES, exitWhenDone, PROCESS_IO, runProgram, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { configOption, configOrExit } from './command-args';
import { GatewayConfigError } from '@oncegate/host-config';
import { serveServices, storeLocation, type ServiceDefinition } from './host';
import { KeyFileError } from '@oncegate/host-vault';
import { PortTakenError } from '@oncegate/host-operations';
import { announceReady, clearReadyFile, formatDuration, prepareReadyFile, readyFileOption, sinceProcessStart } from './ready-signal';
import { SealKeyError } from '@oncegate/vault';

/** A start that cannot go on for a reason its message names with what to change (printed without a stack). */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/** How a failed start is told: one line naming the cause and that nothing was started; an unknown error is thrown. */
export function startupFailure(error: unknown, io: CliIo): ExitCode {
  if (error instanceof StartupError) {
    io.stderr(`${error.message}; nothing was started\n`);
    return EXIT_CODES.failed;
  }
  if (error instanceof SealKeyError) {
    io.stderr(`cannot seal the journal: ${error.message}; nothing was started\n`);
    return EXIT_CODES.failed;
  }
  if (error instanceof KeyFileError) {
    io.stderr(`cannot open the gateway's keys: ${error.message}; nothing was started\n`);
    return EXIT_CODES.failed;
  }
  if (error instanceof ContractValidationError) {
    io.stderr(`the contract file is invalid; nothing was started:\n${error.format()}\n`);
    return EXIT_CODES.failed;
  }
  if (error instanceof GatewayConfigError) {
    io.stderr(`${error.message}\nnothing was started\n`);
    return EXIT_CODES.failed;
  }
  if (error instanceof EventStoreOpenError || error instanceof EventStoreUnavailableError) {
    io.stderr(`${error.message}; nothing was started\n`);
    return EXIT_CODES.failed;
  }
  if (error instanceof PortTakenError) {
    io.stderr(`${error.message}; nothing was started\n`);
    return EXIT_CODES.failed;
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    // A listener that does not say which setting chooses its port: naming one could send the operator to the wrong key.
    io.stderr(`cannot listen: ${(error as Error).message}; nothing was started\n`);
    return EXIT_CODES.failed;
  }
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    io.stderr(
      `cannot write ${(error as NodeJS.ErrnoException).path ?? 'the data folder'} (${code}): the gateway needs write access to its data folder; ` +
        'nothing was started\n',
    );
    return EXIT_CODES.failed;
  }
  if (code === 'ENOENT') {
    io.stderr(`file not found: ${(error as NodeJS.ErrnoException).path}\n`);
    return EXIT_CODES.failed;
  }
  throw error;
}

/**
 * Stops what runs; a store gone meanwhile (a server shut down first) leaves leases and claims to expire rather than
 * be released, which is said in one line instead of a stack.
 */
export async function stoppedCleanly(close: () => Promise<void>, io: CliIo): Promise<ExitCode> {
  try {
    await close();
    return EXIT_CODES.ok;
  } catch (error) {
    if (!(error instanceof EventStoreUnavailableError)) throw error;
    io.stderr(`stopped without releasing its leases and claims (they expire after instance_lease): ${error.message}\n`);
    return EXIT_CODES.failed;
  }
}

export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}

/** What every service process's help says about how it runs. */
export const SERVICE_PROCESS_HELP =
  'Runs the service in the foreground until SIGINT or SIGTERM, with the same configuration as oncegate start. ' +
  'Instances of a service share its events (a consumer group: one execution is handled by one instance at a time, ' +
  'taken over when an instance stops renewing its claims within instance_lease). Meant for a store every process ' +
  'reaches: store.driver postgres. deploy/local starts every service this way; see docs/deploy.md.';

/** What a service process takes on its command line. */
export interface ServiceProcessOptions {
  readonly config?: string | undefined;
  readonly readyFile?: string | undefined;
}

/**
 * Runs services (one, or several sharing the process) as this process until SIGINT or SIGTERM: prints a summary on
 * stdout that ends with an empty line (the log goes to stderr), signals that it is ready, then stops in order.
 */
export async function runServiceProcess(services: readonly ServiceDefinition[], options: ServiceProcessOptions, io: CliIo): Promise<ExitCode> {
  const { readyFile } = options;
  const config = configOrExit(options, io);
  if (typeof config === 'number') return config;
  prepareReadyFile(readyFile);
  const stopped = untilSignal();
  // A service without a listener has nothing else that keeps the process running until the signal.
  const keepAlive = setInterval(() => undefined, 2 ** 30);
  void stopped.then(() => clearInterval(keepAlive));
  let running;
  try {
    running = await serveServices(services, config);
  } catch (error) {
    clearInterval(keepAlive);
    return startupFailure(error, io);
  }
  const readyMs = sinceProcessStart();
  io.stdout(
    [
      `Oncegate ${running.service} is running (instance ${running.instance}), ready in ${formatDuration(readyMs)}`,
      ...(running.url ? [`  listening on: ${running.url}`] : []),
      `  store:        ${config.store.driver} ${storeLocation(config)}`,
      ...(config.store.driver === 'sqlite' ? ['  note:         a SQLite store is shared by the processes of one machine only; use store.driver postgres to run services apart'] : []),
      ...(running.devToken ? [`  dev token:    ${running.devToken}   (agent:dev)`] : []),
      ...running.summary,
      ...(running.operationsUrl ? [`  operations:   ${running.operationsUrl}   (/metrics, /healthz, /readyz)`] : []),
      // An empty line ends the summary.
      '',
      '',
    ].join('\n'),
  );
  announceReady({ service: running.service, ...(running.url ? { url: running.url } : {}), ...(running.operationsUrl ? { operations: running.operationsUrl } : {}), readyMs }, readyFile);
  const signal = await stopped;
  io.stdout(`${signal}: stopping\n`);
  clearReadyFile(readyFile);
  return stoppedCleanly(() => running.close(), io);
}

/** The main of a service's own app (apps/<service>): `node main.js [--config <file>]`, as `oncegate serve <service>`. */
export async function serviceMain(service: ServiceDefinition, argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const program = new Command(service.name)
    .description(SERVICE_PROCESS_HELP)
    .addOption(configOption())
    .addOption(readyFileOption())
    .action(action((io, options) => runServiceProcess([service], options, io)));
  exitWhenDone(await runProgram(program, argv, PROCESS_IO));
}
