import { logLevelsUpTo } from '@oncegate/host-config';
import { Argument, Command } from '@commander-js/extra-typings';
import { action, EXIT_CODES } from '@oncegate/host-cli';
import { announceReady, clearReadyFile, formatDuration, prepareReadyFile, readyFileOption, runServiceProcess, SERVICE_PROCESS_HELP, sinceProcessStart, startupFailure, stoppedCleanly, storeLocation, untilSignal } from '@oncegate/service-host';
import { connectMcpServer, createMcpServer, StdioConnection, tokenRevoked } from '@oncegate/service-gateway';
import { relaySummary } from '@oncegate/service-relay-kafka';
import { SERVICES, startGateway } from '../../gateway';
import { configOption, configOrExit } from '../command-helpers';
import { tokenCommands } from './token-commands';

export function startCommand() {
  return new Command('start')
    .summary('Run the gateway: MCP over Streamable HTTP, all services in one process on the configured store.')
    .description(
      'Runs the gateway in the foreground until SIGINT or SIGTERM: MCP over Streamable HTTP, all services in one process on the ' +
        'configured store. Configuration: the file (--config, ONCEGATE_CONFIG, or ./oncegate.yaml), then ONCEGATE_* variables; see ' +
        'README. Prints a summary on stdout; logs go to stderr (log_level, ONCEGATE_LOG_LEVEL).',
    )
    .addOption(configOption())
    .addOption(readyFileOption())
    .action(
      action(async (io, options) => {
        const { readyFile } = options;
        const config = configOrExit(options, io);
        if (typeof config === 'number') return config;
        prepareReadyFile(readyFile);
        // Heard from now on: a signal during the start stops the gateway as soon as it is up.
        const stopped = untilSignal();
        let gateway;
        try {
          gateway = await startGateway(config);
        } catch (error) {
          return startupFailure(error, io);
        }
        const readyMs = sinceProcessStart();
        io.stdout(
          [
            `Oncegate is listening on ${gateway.url} (ready in ${formatDuration(readyMs)})`,
            `  tools:        ${[...gateway.tools.keys()].join(', ')} (from ${config.contractsFile})`,
            `  data folder:  ${gateway.dataDir}`,
            `  store:        ${config.store.driver} ${storeLocation(config)}`,
            `  runtime:      Node ${process.version}`,
            ...(gateway.url ? [`  console:      ${new URL('/console/', gateway.url).href}   (sign in with an approver token: oncegate approvers add <name>)`] : []),
            ...(gateway.devToken ? [`  dev token:    ${gateway.devToken}   (agent:dev; send as 'Authorization: Bearer <token>')`] : []),
            ...(gateway.demoTargetUrl ? [`  demo target:  ${gateway.demoTargetUrl}   (GET /effects counts side effects)`] : []),
            ...relaySummary(config),
            ...(gateway.operationsUrl ? [`  operations:   ${gateway.operationsUrl}   (/metrics, /healthz, /readyz)`] : []),
            ...(config.unauthenticatedAgent !== null
              ? [`  NO TOKEN:     requests without a token are served as ${config.unauthenticatedAgent} (testing.unauthenticated_agent: TEST ONLY)`]
              : []),
            '',
          ].join('\n'),
        );
        announceReady({ service: 'oncegate', url: gateway.url, ...(gateway.operationsUrl ? { operations: gateway.operationsUrl } : {}), readyMs }, readyFile);
        const signal = await stopped;
        io.stdout(`${signal}: stopping\n`);
        clearReadyFile(readyFile);
        return stoppedCleanly(() => gateway.close(), io);
      }),
    );
}

export function serveCommand() {
  return new Command('serve')
    .summary('Run a service (or several sharing the process) as one instance among any number on a shared store.')
    .description(
      `${SERVICE_PROCESS_HELP} Services named together share one process: the gateway then decides the steps of ` +
        'authorization and of its dispatchers in the commit that accepts a call, as oncegate start does.',
    )
    .addArgument(new Argument('<service...>', 'the services to run').choices([...SERVICES.keys()]))
    .addOption(configOption())
    .addOption(readyFileOption())
    .action(
      action(async (io, names, options) => {
        const twice = names.find((name, index) => names.indexOf(name) !== index);
        if (twice !== undefined) {
          io.stderr(`oncegate: serve: '${twice}' is named twice\n`);
          return EXIT_CODES.usage;
        }
        return runServiceProcess(names.map((name) => SERVICES.get(name)!), options, io);
      }),
    );
}

export function stdioCommand() {
  return new Command('stdio')
    .summary('Serve MCP over stdio for one agent (token from ONCEGATE_TOKEN).')
    .description(
      'Speaks MCP on stdin/stdout for the agent whose token ONCEGATE_TOKEN holds; logs go to stderr. ONCEGATE_RUN optionally ' +
        'declares the agent run.',
    )
    .addOption(configOption())
    .action(
      action(async (io, options) => {
        const config = configOrExit(options, io);
        if (typeof config === 'number') return config;
        let gateway;
        try {
          gateway = await startGateway({ ...config, demoTarget: { ...config.demoTarget, enabled: false } }, {
            front: 'none',
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
        // Stopped by a signal with the connection open: its unproven answers are recorded as such before the store closes.
        transport.deliveries.end('the gateway stopped before anything proved receipt');
        await gateway.close();
        return EXIT_CODES.ok;
      }),
    );
}

export function agentsCommand() {
  return tokenCommands({
    group: 'agents',
    label: 'agent',
    description: 'Agents and their API tokens, which they send as a bearer token: add, list, revoke.',
    directory: (folder) => folder.agents,
    summaries: {
      add: 'Issue an API token for an agent (printed once, stored hashed).',
      list: 'List agents and their tokens (ids only).',
      revoke: 'Revoke every token of an agent; its calls get 401 from then on.',
    },
  });
}
