import { ContractValidationError } from '@oncegate/contracts';
import { EventStoreOpenError, EventStoreUnavailableError } from '@oncegate/event-store';
import { GatewayConfigError, logLevelsUpTo } from '../../config/gateway-config';
import { tokenRevoked } from '../../front/mcp-errors';
import { connectMcpServer, createMcpServer } from '../../front/mcp-server';
import { StdioConnection } from '../../front/stdio-connection';
import { serveService, SERVICES, startGateway, storeLocation, type ServiceName } from '../../gateway';
import { KeyFileError } from '../../infrastructure/key-files';
import { SealKeyError } from '../../infrastructure/seal-keys';
import { EXIT_CODES, UsageError, type CliCommand, type CliIo, type ExitCode } from '../cli-command';
import { configOrExit, parseCommandArgs } from '../command-helpers';
import { tokenCommands } from './token-commands';

function startupFailure(error: unknown, io: CliIo): ExitCode {
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
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    io.stderr(`cannot listen: ${(error as Error).message}; set listen.port or ONCEGATE_PORT\n`);
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
async function stoppedCleanly(close: () => Promise<void>, io: CliIo): Promise<ExitCode> {
  try {
    await close();
    return EXIT_CODES.ok;
  } catch (error) {
    if (!(error instanceof EventStoreUnavailableError)) throw error;
    io.stderr(`stopped without releasing its leases and claims (they expire after instance_lease): ${error.message}\n`);
    return EXIT_CODES.failed;
  }
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}

export const startCommand: CliCommand = {
  group: 'start',
  name: '',
  summary: 'Run the gateway: MCP over Streamable HTTP, all services in one process on the configured store.',
  usage: `Usage: oncegate start [--config <file>]

Runs the gateway in the foreground until SIGINT or SIGTERM. Configuration: the file
(--config, ONCEGATE_CONFIG, or ./oncegate.yaml), then ONCEGATE_* variables; see README.`,
  async run(args, io) {
    const config = configOrExit(parseCommandArgs(args), io);
    if (typeof config === 'number') return config;
    // Heard from now on: a signal during the start stops the gateway as soon as it is up.
    const stopped = untilSignal();
    let gateway;
    try {
      gateway = await startGateway(config);
    } catch (error) {
      return startupFailure(error, io);
    }
    io.stdout(
      [
        `Oncegate is listening on ${gateway.url}`,
        `  tools:        ${[...gateway.tools.keys()].join(', ')} (from ${config.contractsFile})`,
        `  data folder:  ${gateway.dataDir}`,
        `  store:        ${config.store.driver} ${storeLocation(config)}`,
        `  runtime:      Node ${process.version}`,
        ...(gateway.url ? [`  console:      ${new URL('/console/', gateway.url).href}   (sign in with an approver token: oncegate approvers add <name>)`] : []),
        ...(gateway.devToken ? [`  dev token:    ${gateway.devToken}   (agent:dev; send as 'Authorization: Bearer <token>')`] : []),
        ...(gateway.demoTargetUrl ? [`  demo target:  ${gateway.demoTargetUrl}   (GET /effects counts side effects)`] : []),
        ...(config.unauthenticatedAgent !== null
          ? [`  NO TOKEN:     requests without a token are served as ${config.unauthenticatedAgent} (testing.unauthenticated_agent: TEST ONLY)`]
          : []),
        '',
      ].join('\n'),
    );
    const signal = await stopped;
    io.stdout(`${signal}: stopping\n`);
    return stoppedCleanly(() => gateway.close(), io);
  },
};

export const serveCommand: CliCommand = {
  group: 'serve',
  name: '',
  summary: `Run one service in this process, as one instance among any number on a shared store (${SERVICES.join(' | ')}).`,
  usage: `Usage: oncegate serve <service> [--config <file>]

Services: ${SERVICES.join(', ')}.
Runs one service in the foreground until SIGINT or SIGTERM, with the same configuration as
oncegate start. Instances of a service share its events (a consumer group: one execution is
handled by one instance at a time, taken over when an instance stops renewing its claims
within instance_lease). Meant for a store every process reaches: store.driver postgres.
deploy/local starts every service this way; see docs/deploy.md.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args);
    const [service, ...rest] = parsed.positionals;
    if (service === undefined || rest.length > 0 || !(SERVICES as readonly string[]).includes(service)) {
      throw new UsageError(`name one service: ${SERVICES.join(', ')}${service === undefined ? '' : ` (not '${[service, ...rest].join(' ')}')`}`);
    }
    const config = configOrExit(parsed, io);
    if (typeof config === 'number') return config;
    const stopped = untilSignal();
    // A service without a listener has nothing else that keeps the process running until the signal.
    const keepAlive = setInterval(() => undefined, 2 ** 30);
    void stopped.then(() => clearInterval(keepAlive));
    let running;
    try {
      running = await serveService(service as ServiceName, config);
    } catch (error) {
      clearInterval(keepAlive);
      return startupFailure(error, io);
    }
    io.stdout(
      [
        `Oncegate ${service} is running (instance ${running.instance})`,
        ...(running.url ? [`  listening on: ${running.url}`] : []),
        `  store:        ${config.store.driver} ${storeLocation(config)}`,
        ...(config.store.driver === 'sqlite' ? ['  note:         a SQLite store is shared by the processes of one machine only; use store.driver postgres to run services apart'] : []),
        ...(running.devToken ? [`  dev token:    ${running.devToken}   (agent:dev)`] : []),
        // An empty line ends the summary: what follows is the service's log.
        '',
        '',
      ].join('\n'),
    );
    const signal = await stopped;
    io.stdout(`${signal}: stopping\n`);
    return stoppedCleanly(() => running.close(), io);
  },
};

export const stdioCommand: CliCommand = {
  group: 'stdio',
  name: '',
  summary: 'Serve MCP over stdio for one agent (token from ONCEGATE_TOKEN).',
  usage: `Usage: ONCEGATE_TOKEN=<token> oncegate stdio [--config <file>]

Speaks MCP on stdin/stdout for the agent the token belongs to; logs go to stderr.
ONCEGATE_RUN optionally declares the agent run.`,
  async run(args, io) {
    const config = configOrExit(parseCommandArgs(args), io);
    if (typeof config === 'number') return config;
    let gateway;
    try {
      gateway = await startGateway({ ...config, demoTarget: { ...config.demoTarget, enabled: false } }, {
        front: 'none',
        logToStderr: true,
        logLevels: config.logLevel === 'log' ? ['warn', 'error'] : logLevelsUpTo(config.logLevel),
      });
    } catch (error) {
      return startupFailure(error, io);
    }
    const token = process.env['ONCEGATE_TOKEN'];
    const actor = await gateway.agents.authenticate(token);
    if (actor === undefined) {
      io.stderr('ONCEGATE_TOKEN is missing, unknown or revoked; issue one with: oncegate agents add <name>\n');
      await gateway.close();
      return EXIT_CODES.failed;
    }
    const run = process.env['ONCEGATE_RUN'];
    const transport = new StdioConnection();
    const server = createMcpServer(gateway.tools, gateway.toolCalls, {
      actor,
      transport: 'stdio',
      runHeader: () => (run ? run : undefined),
      deliveryOf: (_sessionId, requestId) => transport.deliveries.watchOf(requestId),
      // The token is checked on every request, as over HTTP: a revocation by another process is read first.
      recheckCredentials: async () => {
        await gateway.agents.refresh();
        if ((await gateway.agents.authenticate(token)) !== actor) throw tokenRevoked();
      },
    });
    const closed = new Promise<void>((resolve) => (transport.onclose = () => resolve()));
    process.stdin.once('end', () => void transport.close());
    await connectMcpServer(server, transport);
    await Promise.race([closed, untilSignal()]);
    await gateway.close();
    return EXIT_CODES.ok;
  },
};

const agentTokenCommands = tokenCommands({
  group: 'agents',
  label: 'agent',
  directory: (folder) => folder.agents,
  summaries: {
    add: 'Issue an API token for an agent (printed once, stored hashed).',
    list: 'List agents and their tokens (ids only).',
    revoke: 'Revoke every token of an agent; its calls get 401 from then on.',
  },
});

export const agentsAddCommand = agentTokenCommands.add;
export const agentsListCommand = agentTokenCommands.list;
export const agentsRevokeCommand = agentTokenCommands.revoke;
