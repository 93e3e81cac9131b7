import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This checkout: whose build the services run unless told another (`ServiceOptions.checkout`). */
const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));
/** A checkout's `oncegate` command. */
const launcherOf = (checkout: string) => join(checkout, 'bin/oncegate.mjs');

/**
 * How a service's process starts: each service but the gateway is an app of its own (`npm run build` writes
 * dist/apps/<service>/main.js); the gateway's app is the CLI, whose `serve gateway` runs the MCP front alone.
 */
function serviceCommand(service: LocalService, checkout = CHECKOUT): string[] {
  if (service === 'gateway') return [launcherOf(checkout), 'serve', 'gateway'];
  return [join(checkout, `dist/apps/${service}/main.js`)];
}
const START_TIMEOUT_MS = 60_000;
/** How long a stopping process may take before it is killed (a service that stops drains what it holds first). */
const STOP_TIMEOUT_MS = 30_000;

/** The services `oncegate serve` runs. */
export type LocalService = 'gateway' | 'authorization' | 'dispatcher-http' | 'dispatcher-ssh' | 'dispatcher-mcp' | 'dispatcher-sql' | 'result-delivery' | 'sealer' | 'relay-kafka';

/** How many processes of each service run. */
export type LocalLayout = Readonly<Record<LocalService, number>>;

/**
 * The layout `npm run local` starts: every service apart, the competing ones more than once; the Kafka relay only with
 * a broker (`npm run local -- --kafka`). The MCP and SQL channels' dispatchers run only where a tool names an upstream
 * MCP server or a database (none of the local layout's contracts do).
 */
export const LOCAL_LAYOUT: LocalLayout = { gateway: 2, authorization: 2, 'dispatcher-http': 3, 'dispatcher-ssh': 1, 'dispatcher-mcp': 0, 'dispatcher-sql': 0, 'result-delivery': 2, sealer: 1, 'relay-kafka': 0 };

/** A service this repository does not build: a channel's dispatcher built on the kit's package elsewhere. */
export interface ServiceCommand {
  /** How it is named in messages (`dispatcher-ledger`). */
  readonly name: string;
  /** Node's arguments: its entry point and options; `--config <file>` is added. */
  readonly command: readonly string[];
}

/** One service's process (`oncegate serve <service>`, the service's own app, or a command). */
export interface ServiceProcess {
  readonly service: LocalService | string;
  /** The instance id it printed. */
  readonly instance: string;
  readonly pid: number;
  /** The MCP endpoint (gateways only). */
  readonly url: string | undefined;
  /** The development token (gateways with `dev_token`). */
  readonly devToken: string | undefined;
  /** Its operations listener (`/metrics`, `/healthz`, `/readyz`), when configured. */
  readonly operationsUrl: string | undefined;
  readonly child: ChildProcess;
  /** Everything it wrote, stdout and stderr. */
  output(): string;
  /**
   * SIGTERM, and waits for it to exit; one still running after `timeoutMs` (30 s) is killed (kill -9), and the stop
   * fails saying so, with what it wrote.
   */
  stop(timeoutMs?: number): Promise<void>;
  /** kill -9, and waits for it to exit. */
  kill(): Promise<void>;
}

export interface ServiceOptions {
  /** The configuration file every process reads (`store.driver: postgres`). */
  readonly configFile: string;
  /** Added to this process's environment (the store URL, the master key). */
  readonly env?: NodeJS.ProcessEnv;
  /** Where it runs; relative paths of the configuration are read from here. */
  readonly cwd?: string;
  /** A gateway's port (`ONCEGATE_PORT`). */
  readonly port?: number;
  /** The checkout whose build runs (its `bin/` and `dist/apps/`): by default this one; another version's to compare. */
  readonly checkout?: string;
}

/**
 * Several services in one process (`oncegate serve a b …`), as a command `startService` runs: the gateway, when among
 * them, decides the others' steps in the commit that accepts a call (docs/deploy.md).
 */
export function servedTogether(services: readonly LocalService[]): ServiceCommand {
  return { name: services.join('+'), command: [launcherOf(CHECKOUT), 'serve', ...services] };
}

/** Starts a service as its own process and waits until it says it runs. */
export async function startService(what: LocalService | ServiceCommand, options: ServiceOptions): Promise<ServiceProcess> {
  const service = typeof what === 'string' ? what : what.name;
  const command = typeof what === 'string' ? serviceCommand(what, options.checkout) : what.command;
  const env = { ...process.env, ...options.env, ...(options.port === undefined ? {} : { ONCEGATE_PORT: String(options.port) }) };
  const child = spawn(process.execPath, [...command, '--config', options.configFile], {
    cwd: options.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk) => (output += String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const started = await new Promise<{ instance: string; url?: string; devToken?: string; operationsUrl?: string }>((resolve, reject) => {
    let instance: string | undefined;
    let url: string | undefined;
    let operationsUrl: string | undefined;
    let seenToken: string | undefined;
    const timer = setTimeout(() => reject(new Error(`${service} did not start within ${START_TIMEOUT_MS} ms:\n${output}`)), START_TIMEOUT_MS);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      instance ??= /is running \(instance (\S+)\)/.exec(line)?.[1];
      url ??= /listening on: (\S+)/.exec(line)?.[1];
      operationsUrl ??= /operations:\s+(\S+)/.exec(line)?.[1];
      const devToken = /dev token:\s+(ogt_\S+)/.exec(line)?.[1];
      // The summary ends with an empty line.
      if (instance !== undefined && line === '') {
        clearTimeout(timer);
        resolve({ instance, url, devToken: devToken ?? seenToken, operationsUrl });
      }
      seenToken ??= devToken;
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${service} exited (${code ?? signal}) before it ran:\n${output}`));
    });
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    service,
    instance: started.instance,
    pid: child.pid!,
    url: started.url,
    devToken: started.devToken,
    operationsUrl: started.operationsUrl,
    child,
    output: () => output,
    async stop(timeoutMs = STOP_TIMEOUT_MS) {
      if (!running()) return;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const late = await Promise.race([exited.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs)))]);
      clearTimeout(timer);
      if (!late) return;
      child.kill('SIGKILL');
      await exited;
      throw new Error(`${service} (pid ${child.pid}) did not stop within ${timeoutMs / 1000} s of SIGTERM and was killed; what it wrote:\n${output.slice(-4000)}`);
    },
    async kill() {
      if (running()) child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface LocalDeploymentOptions extends Omit<ServiceOptions, 'port'> {
  readonly layout?: Partial<LocalLayout>;
  /** The gateways' ports, one per gateway. */
  readonly gatewayPorts: readonly number[];
}

export interface LocalDeployment {
  readonly processes: ServiceProcess[];
  /** The running processes of one service. */
  of(service: LocalService): ServiceProcess[];
  /** Starts one more process of a service (a gateway takes the next of its ports, or `port`). */
  add(service: LocalService, port?: number): Promise<ServiceProcess>;
  /**
   * Stops every process (SIGTERM), gateways first, each service's together; then fails, when one had to be killed,
   * naming each.
   */
  stop(): Promise<void>;
}

/**
 * Starts every service of the layout as its own process on one machine. The first gateway starts alone (it makes
 * the data folder's keys and the development token when there are none); the others follow together.
 */
export async function startLocalDeployment(options: LocalDeploymentOptions): Promise<LocalDeployment> {
  const layout: LocalLayout = { ...LOCAL_LAYOUT, ...options.layout };
  if (options.gatewayPorts.length < layout.gateway) throw new Error(`${layout.gateway} gateways need as many ports; ${options.gatewayPorts.length} given`);
  const processes: ServiceProcess[] = [];
  let gateways = 0;
  const add = async (service: LocalService, port?: number) => {
    const chosen = service === 'gateway' ? (port ?? options.gatewayPorts[gateways++]) : undefined;
    const started = await startService(service, { ...options, port: chosen });
    processes.push(started);
    return started;
  };
  const stop = async () => {
    // The gateways first: no call comes in while the others stop.
    const order = ['gateway', ...Object.keys(LOCAL_LAYOUT).filter((service) => service !== 'gateway')] as LocalService[];
    const failures: unknown[] = [];
    for (const service of order) {
      const stopped = await Promise.allSettled(processes.filter((process) => process.service === service).map((process) => process.stop()));
      for (const result of stopped) if (result.status === 'rejected') failures.push(result.reason);
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, failures.map((failure) => (failure as Error).message.split('\n')[0]).join('; '));
  };
  try {
    const rest: LocalService[] = [];
    for (const [service, count] of Object.entries(layout) as Array<[LocalService, number]>) {
      for (let i = 0; i < count; i += 1) rest.push(service);
    }
    const first = rest.indexOf('gateway');
    if (first >= 0) await add(rest.splice(first, 1)[0]!);
    await Promise.all(rest.map((service) => add(service)));
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    processes,
    of: (service) => processes.filter((process) => process.service === service && process.child.exitCode === null && process.child.signalCode === null),
    add,
    stop,
  };
}
