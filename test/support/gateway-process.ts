import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from '@oncegate/deploy-local';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { initVault, storeCredential } from '@oncegate/vault';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { JournalLocation } from './journal';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LAUNCHER = join(ROOT, 'bin/oncegate.mjs');
/** A free loopback port (so a restarted gateway can come back on the same URL): deploy/local's helper. */
export { freePort };

const TOOLS_TEMPLATE = fileURLToPath(new URL('./test-tools.yaml', import.meta.url));


export interface GatewayFolder {
  readonly dir: string;
  readonly dataDir: string;
  /** Where the gateway's journal is: the data folder, or the PostgreSQL store of `store.postgresUrl`. */
  readonly journal: JournalLocation;
  readonly configFile: string;
  readonly port: number;
  readonly url: string;
  dispose(): void;
}

/** The credential every test gateway sends to the target: a canary that must appear nowhere else. */
export const CREDENTIAL_CANARY = 'cred-canary-7d41f0c2b9';

/** A credential the test folder's vault holds, stored with `oncegate vault set` as an operator would. */
export interface TestCredential {
  readonly ref: string;
  readonly kind: 'bearer' | 'basic' | 'header' | 'ssh_key' | 'password';
  /** `host[:port][/path-prefix]` bindings. */
  readonly bind: readonly string[];
  /** A file holding the value (an SSH key); otherwise the value is `CREDENTIAL_CANARY`, passed in the environment. */
  readonly fromFile?: string;
}

/**
 * A temporary data folder, contracts pointing at `targetUrl`, and a configuration file for one gateway;
 * `overrides` replaces top-level configuration fields (YAML text of the value), and a `listen.<field>` key adds
 * that field to the listen section (which names the folder's port). Its vault (development master
 * key) holds `demo-writer` — a bearer credential whose value is `CREDENTIAL_CANARY`, bound to the target's
 * host and port — and `credentials`; with `vault: false` there is no vault at all. With `store.postgresUrl`
 * the journal and sealed blobs are on that PostgreSQL database (`store.driver: postgres`); with `store.urlFromEnv`
 * the file names the driver only and the URL is left to `ONCEGATE_STORE_URL`, which the caller passes.
 */
export async function gatewayFolder(
  targetUrl: string,
  overrides: Record<string, string> = {},
  credentials: readonly TestCredential[] = [],
  { vault = true, store }: { vault?: boolean; store?: { postgresUrl: string; urlFromEnv?: boolean } } = {},
): Promise<GatewayFolder> {
  const dir = mkdtempSync(join(tmpdir(), 'oncegate-e2e-'));
  const tools = join(dir, 'tools.yaml');
  writeFileSync(tools, readFileSync(TOOLS_TEMPLATE, 'utf8').replaceAll('TARGET', targetUrl));
  const port = await freePort();
  const configFile = join(dir, 'oncegate.yaml');
  const listen = Object.entries(overrides).flatMap(([key, value]) => (key.startsWith('listen.') ? [`, ${key.slice('listen.'.length)}: ${value}`] : []));
  const fields: Record<string, string> = {
    listen: `{ host: 127.0.0.1, port: ${port}, path: /mcp${listen.join('')} }`,
    data_dir: join(dir, 'data'),
    contracts: tools,
    dev_token: 'true',
    call_wait: '15s',
    max_request_bytes: '64KiB',
    ...(store === undefined ? {} : { store: store.urlFromEnv ? '{ driver: postgres }' : `{ driver: postgres, url: '${store.postgresUrl}' }` }),
    ...Object.fromEntries(Object.entries(overrides).filter(([key]) => !key.startsWith('listen.'))),
  };
  writeFileSync(configFile, Object.entries(fields).map(([key, value]) => `${key}: ${value}`).join('\n') + '\n');
  const folder: GatewayFolder = {
    dir,
    dataDir: join(dir, 'data'),
    journal: store === undefined ? join(dir, 'data') : { postgresUrl: store.postgresUrl },
    configFile,
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
  if (!vault) return folder;
  const target = new URL(targetUrl);
  const env = store?.urlFromEnv ? { ONCEGATE_STORE_URL: store.postgresUrl } : {};
  const vaultCredentials = [{ ref: 'demo-writer', kind: 'bearer', bind: [`${target.hostname}:${target.port}`] } as const, ...credentials];
  if (store === undefined) await storeInVaultHere(folder, vaultCredentials);
  else await storeInVault(folder, vaultCredentials, env);
  return folder;
}

/** `oncegate vault init --dev`, then `oncegate vault set` for each credential; any failure fails the test. */
async function storeInVault(folder: GatewayFolder, credentials: readonly TestCredential[], baseEnv: NodeJS.ProcessEnv): Promise<void> {
  const must = async (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const result = await oncegate(folder, args, { ...baseEnv, ...env });
    if (result.code !== 0) throw new Error(`oncegate ${args.join(' ')} exited with ${result.code}: ${result.stderr}`);
  };
  await must(['vault', 'init', '--dev']);
  for (const credential of credentials) {
    const source = credential.fromFile !== undefined ? ['--from-file', credential.fromFile] : ['--from-env', 'ONCEGATE_TEST_CREDENTIAL'];
    const bindings = credential.bind.flatMap((binding) => ['--bind', binding]);
    await must(['vault', 'set', credential.ref, '--kind', credential.kind, ...bindings, ...source], { ONCEGATE_TEST_CREDENTIAL: CREDENTIAL_CANARY });
  }
}

/**
 * The vault those commands make in a SQLite folder, made with the same library calls they make (`initVault`,
 * `storeCredential`, which checks the input and the value as the command does) in this process: a folder costs no process
 * starts. The commands themselves are the subject of vault-commands.int.spec.ts; on PostgreSQL they still run.
 */
async function storeInVaultHere(folder: GatewayFolder, credentials: readonly TestCredential[]): Promise<void> {
  mkdirSync(folder.dataDir, { recursive: true, mode: 0o700 });
  const store = openSqliteEventStore({ file: join(folder.dataDir, 'events.db') });
  try {
    const context = { store, dataDir: folder.dataDir, env: {}, by: 'operator:cli' };
    await initVault(context, { dev: true });
    for (const credential of credentials) {
      const raw = credential.fromFile !== undefined ? readFileSync(credential.fromFile, 'utf8') : CREDENTIAL_CANARY;
      await storeCredential(context, { ref: credential.ref, kind: credential.kind, bindings: credential.bind }, raw);
    }
  } finally {
    await store.close();
  }
}

/** Adds `include: [file]` to the folder's contract file (`file` relative to it): the operator's step after `oncegate upstream add`. */
export function includeInContracts(folder: GatewayFolder, file: string): void {
  const tools = join(folder.dir, 'tools.yaml');
  writeFileSync(tools, readFileSync(tools, 'utf8').replace(/^version: 1$/m, `version: 1\ninclude: [${file}]`));
}

/**
 * The same data folder and contracts under a second configuration file that listens on another port: for a
 * second gateway process on one folder. Disposing it leaves the folder to its first owner.
 */
export async function sameFolderOnAnotherPort(folder: GatewayFolder): Promise<GatewayFolder> {
  const port = await freePort();
  const configFile = join(folder.dir, `oncegate-${port}.yaml`);
  writeFileSync(configFile, readFileSync(folder.configFile, 'utf8').replace(`port: ${folder.port},`, `port: ${port},`));
  return { ...folder, configFile, port, url: `http://127.0.0.1:${port}/mcp`, dispose: () => undefined };
}

export interface GatewayProcess {
  readonly url: string;
  readonly devToken: string;
  readonly child: ChildProcess;
  /** Everything the process wrote, for the secret checks. */
  output(): string;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** kill -9 and wait. */
  kill(): Promise<void>;
}

/** How often `startGatewayProcess` looks for the ready file. */
const READY_POLL_MS = 20;

/**
 * Runs `oncegate start` as its own process, exactly as a user would, and waits until it serves: until it writes its
 * ready file (`--ready-file`), whatever its log level, and its summary has come through (for `output()`). The
 * development token is the one it keeps in the data folder (unless `devToken` is false). `launcher`: another
 * installation's bin/oncegate.mjs.
 */
export async function startGatewayProcess(
  folder: GatewayFolder,
  env: NodeJS.ProcessEnv = {},
  options: { devToken?: boolean; launcher?: string } = {},
): Promise<GatewayProcess> {
  // The folder's port was free when it was drawn; a test beside this one may hold it for a moment since (its own
  // draw binds a port to let it go), which a gateway coming back on it meets as a port taken. Tried again a few
  // times; a port held for longer fails as before.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startGatewayProcessOnce(folder, env, options);
    } catch (error) {
      if (attempt === PORT_TAKEN_ATTEMPTS || !String((error as Error).message).includes('EADDRINUSE')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** How often `startGatewayProcess` starts a gateway whose port was taken. */
const PORT_TAKEN_ATTEMPTS = 4;

async function startGatewayProcessOnce(
  folder: GatewayFolder,
  env: NodeJS.ProcessEnv,
  { devToken = true, launcher = LAUNCHER }: { devToken?: boolean; launcher?: string },
): Promise<GatewayProcess> {
  // One per port: a second gateway on the folder (sameFolderOnAnotherPort) has its own. A file left by a gateway that
  // was killed must not be read as this one's.
  const readyFile = join(folder.dir, `ready-${folder.port}.json`);
  rmSync(readyFile, { force: true });
  const child = spawn(process.execPath, [launcher, 'start', '--config', folder.configFile, '--ready-file', readyFile], {
    cwd: folder.dir,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += String(chunk)));
  child.stderr!.on('data', (chunk) => (output += String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const started = await new Promise<{ url: string; devToken: string }>((resolve, reject) => {
    const done = (settle: () => void) => {
      clearTimeout(timer);
      clearInterval(poll);
      child.off('exit', onExit);
      settle();
    };
    const timer = setTimeout(() => done(() => reject(new Error(`gateway did not start:\n${output}`))), 30_000);
    const poll = setInterval(() => {
      if (!existsSync(readyFile)) return;
      const { url } = JSON.parse(readFileSync(readyFile, 'utf8')) as { url: string };
      // The summary naming the URL was written before the file: once it has come through the pipe, output() holds it.
      if (!output.includes(url)) return;
      const tokenFile = join(folder.dataDir, 'dev-token');
      if (devToken && !existsSync(tokenFile)) done(() => reject(new Error(`the gateway serves without a development token (dev_token is off): pass devToken: false\n${output}`)));
      else done(() => resolve({ url, devToken: devToken ? readFileSync(tokenFile, 'utf8').trim() : '' }));
    }, READY_POLL_MS);
    const onExit = (code: number | null) => done(() => reject(new Error(`gateway exited with ${code}:\n${output}`)));
    child.once('exit', onExit);
  });
  return {
    ...started,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * The user a command runs as when file permissions must hold: the suites may run as root, whom read-only
 * modes do not stop, so then `nobody`; otherwise the current user.
 */
export function unprivilegedUser(): { uid?: number; gid?: number } {
  return process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
}

/** Runs `oncegate <args>` against the folder's configuration (with `env` added) and returns its output. */
export async function oncegate(
  folder: GatewayFolder,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  stdin?: string,
  user: { uid?: number; gid?: number } = {},
  launcher = LAUNCHER,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [launcher, ...args, '--config', folder.configFile], {
    cwd: folder.dir,
    env: { ...process.env, ...env },
    ...user,
    stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (stdin !== undefined) child.stdin!.end(stdin);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += String(chunk)));
  child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

const CLOCK_JUMP = fileURLToPath(new URL('./clock-jump.mjs', import.meta.url));

/** Environment for `startGatewayProcess` that lets `jumpClock` move the gateway's wall clock forward by `stepMs`. */
export function jumpableClockEnv(stepMs: number): NodeJS.ProcessEnv {
  return { NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import ${pathToFileURL(CLOCK_JUMP).href}`.trim(), ONCEGATE_TEST_CLOCK_JUMP_MS: String(stepMs) };
}

/** Moves the wall clock of a gateway started with `jumpableClockEnv` forward by one step; resolves once it moved. */
export async function jumpClock(gateway: GatewayProcess): Promise<void> {
  const before = (gateway.output().match(/clock jumped/g) ?? []).length;
  gateway.child.kill('SIGUSR2');
  const deadline = Date.now() + 5_000;
  while ((gateway.output().match(/clock jumped/g) ?? []).length === before) {
    if (Date.now() > deadline) throw new Error('the gateway clock did not jump');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
