import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@oncegate/deploy-local';

const SSHD = '/usr/sbin/sshd';
const SSH_KEYGEN = 'ssh-keygen';
/** OpenSSH refuses to start without it; the Debian package creates it only when the service starts. */
const PRIVSEP_DIR = '/run/sshd';
const START_TIMEOUT_MS = 10_000;
const PORT_ATTEMPTS = 5;

const run = promisify(execFile);

/** A real OpenSSH server on 127.0.0.1, with keys made for this run only (a real sshd, as users have). */
export interface SshdHandle {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** The server's host key in the pinned contract form: `ssh-ed25519 AAAA…`. */
  readonly hostKey: string;
  /** A different valid ed25519 public key, for host-key mismatch tests. */
  readonly otherHostKey: string;
  /** OpenSSH-format private key (no passphrase) whose public half is authorized for `user`. */
  readonly clientPrivateKey: string;
  /** The login user: the current user unless `startSshd({ user })` named another. */
  readonly user: string;
  /** A temporary directory the tests may write to and inspect (markers, files a command leaves). */
  readonly workDir: string;
  /** Kills every per-connection sshd process (SIGKILL), leaving the listener; commands they started keep running. */
  killConnections(): Promise<void>;
  /**
   * With `startSshd({ delayableExec: true })`: the next command this host starts waits `ms` before it runs, as on a
   * host slow to exec it; the commands after it are not delayed. Resolves at once.
   */
  delayNextExec(ms: number): Promise<void>;
  /** Resolves once the delayed command's exec request has reached the host and it is waiting. */
  whenExecDelayed(): Promise<void>;
  /** Resolves once the delayed command has stopped waiting and is being run. */
  whenDelayedExecReleased(): Promise<void>;
  /** Kills the connections and the listener, and removes the temporary files. */
  stop(): Promise<void>;
}

export interface StartSshdOptions {
  /** Login user authorized with `clientPrivateKey`. Default: the user running the tests. */
  readonly user?: string;
  /**
   * Runs every command through a hook (sshd `ForceCommand`) that can hold the next one back before it starts,
   * for the tests of a late start (`delayNextExec`). The command itself runs as sshd would run it.
   */
  readonly delayableExec?: boolean;
}

/**
 * Starts `/usr/sbin/sshd -D -e -f <config>` on a free loopback port and resolves once it listens.
 *
 * @throws Error mentioning `install openssh-server` when sshd is missing: callers skip their tests with it.
 */
export async function startSshd(options: StartSshdOptions = {}): Promise<SshdHandle> {
  if (!existsSync(SSHD)) {
    throw new Error(`${SSHD} not found: install openssh-server (Debian: apt-get install -y --no-install-recommends openssh-server)`);
  }
  await ensurePrivsepDir();
  const user = options.user ?? userInfo().username;
  // Lower-case hex, not mkdtemp's mixed case: contracts embed these paths, and the contract parser takes a long
  // mixed-case run for a literal token.
  const root = join(tmpdir(), `oncegate-sshd-${randomBytes(6).toString('hex')}`);
  await mkdir(root, { mode: 0o700 });
  try {
    const workDir = join(root, 'work');
    await mkdir(workDir);
    const hostKey = await generateKey(join(root, 'host_ed25519'));
    const otherHostKey = await generateKey(join(root, 'other_host_ed25519'));
    const clientPublicKey = await generateKey(join(root, 'client_ed25519'));
    const clientPrivateKey = await readFile(join(root, 'client_ed25519'), 'utf8');
    await writeFile(join(root, 'authorized_keys'), `${clientPublicKey}\n`, { mode: 0o600 });
    const execHook = options.delayableExec === true ? join(root, 'exec-hook.sh') : undefined;
    if (execHook !== undefined) await writeFile(execHook, execHookScript(root), { mode: 0o700 });

    let lastError: Error | undefined;
    for (let tries = 0; tries < PORT_ATTEMPTS; tries++) {
      const port = await freePort();
      const configFile = join(root, 'sshd_config');
      await writeFile(configFile, sshdConfig(root, port, user, execHook), { mode: 0o600 });
      try {
        const child = await launch(configFile, port);
        return handle({ child, port, hostKey, otherHostKey, clientPrivateKey, user, workDir, root, delayableExec: execHook !== undefined });
      } catch (error) {
        lastError = error as Error;
        // Another process may have taken the port between probing and binding; try a new one.
        if (!/Address already in use|Bind to port/i.test(lastError.message)) break;
      }
    }
    throw lastError ?? new Error('sshd did not start');
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}

async function ensurePrivsepDir(): Promise<void> {
  if (existsSync(PRIVSEP_DIR)) return;
  try {
    await mkdir(PRIVSEP_DIR, { recursive: true, mode: 0o755 });
  } catch (error) {
    throw new Error(`sshd needs ${PRIVSEP_DIR} and it could not be created (${(error as Error).message}); create it as root`);
  }
}

/** Writes an ed25519 key pair without passphrase at `file` and returns the public key as `type base64`. */
async function generateKey(file: string): Promise<string> {
  await run(SSH_KEYGEN, ['-q', '-t', 'ed25519', '-N', '', '-C', 'oncegate-test', '-f', file]);
  const [type, key] = (await readFile(`${file}.pub`, 'utf8')).trim().split(/\s+/);
  return `${type} ${key}`;
}

/**
 * The `ForceCommand` of a host with `delayableExec`: when `exec-delay` exists, the first command to take it sleeps
 * that many seconds before it starts; then it runs the client's command exactly as sshd would (`sh -c`).
 */
function execHookScript(root: string): string {
  return [
    '#!/bin/sh',
    `hook='${root}'`,
    'if mv -- "$hook/exec-delay" "$hook/exec-delaying" 2>/dev/null; then',
    '  sleep "$(cat -- "$hook/exec-delaying")"',
    '  rm -f -- "$hook/exec-delaying"',
    'fi',
    'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"',
    '',
  ].join('\n');
}

function sshdConfig(root: string, port: number, user: string, execHook: string | undefined): string {
  return [
    ...(execHook === undefined ? [] : [`ForceCommand ${execHook}`]),
    `Port ${port}`,
    'ListenAddress 127.0.0.1',
    `HostKey ${join(root, 'host_ed25519')}`,
    `AuthorizedKeysFile ${join(root, 'authorized_keys')}`,
    `PidFile ${join(root, 'sshd.pid')}`,
    `AllowUsers ${user}`,
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    // The tests run as root here and in CI.
    'PermitRootLogin prohibit-password',
    // The temp dir's modes are not what sshd insists on for a home directory.
    'StrictModes no',
    'UsePAM no',
    'UseDNS no',
    'PrintMotd no',
    'X11Forwarding no',
    'AllowTcpForwarding no',
    'MaxStartups 100',
    'LogLevel VERBOSE',
    '',
  ].join('\n');
}

/** Starts sshd in the foreground and waits for "Server listening on 127.0.0.1 port N". */
async function launch(configFile: string, port: number): Promise<ChildProcess> {
  const child = spawn(SSHD, ['-D', '-e', '-f', configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  const log: string[] = [];
  return new Promise<ChildProcess>((resolve, reject) => {
    let started = false;
    const timer = setTimeout(() => fail(new Error(`sshd did not listen within ${START_TIMEOUT_MS} ms:\n${log.join('')}`)), START_TIMEOUT_MS);
    const fail = (error: Error) => {
      clearTimeout(timer);
      if (started) return;
      started = true;
      child.kill('SIGKILL');
      reject(error);
    };
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`sshd exited (${code ?? signal}) before listening:\n${log.join('')}`)));
    // Always drained, so sshd never blocks on a full stderr pipe; the tail is kept for the error above.
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      log.push(chunk);
      if (log.length > 50) log.shift();
      if (!started && log.join('').includes(`Server listening on 127.0.0.1 port ${port}`)) {
        started = true;
        clearTimeout(timer);
        resolve(child);
      }
    });
  });
}

interface Running {
  readonly child: ChildProcess;
  readonly port: number;
  readonly hostKey: string;
  readonly otherHostKey: string;
  readonly clientPrivateKey: string;
  readonly user: string;
  readonly workDir: string;
  readonly root: string;
  readonly delayableExec: boolean;
}

function handle(running: Running): SshdHandle {
  const { child, root } = running;
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const killConnections = async (): Promise<void> => {
    if (child.pid === undefined) return;
    const pids = await sshdDescendants(child.pid);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await waitUntilGone(pids);
  };
  return {
    host: '127.0.0.1',
    port: running.port,
    hostKey: running.hostKey,
    otherHostKey: running.otherHostKey,
    clientPrivateKey: running.clientPrivateKey,
    user: running.user,
    workDir: running.workDir,
    killConnections,
    async delayNextExec(ms) {
      if (!running.delayableExec) throw new Error('start the sshd with { delayableExec: true } to delay a command');
      await writeFile(join(root, 'exec-delay'), `${(ms / 1000).toFixed(3)}\n`);
    },
    whenExecDelayed: () => fileState(join(root, 'exec-delaying'), true),
    whenDelayedExecReleased: () => fileState(join(root, 'exec-delaying'), false),
    async stop() {
      await killConnections();
      child.kill('SIGTERM');
      await exited;
      await rm(root, { recursive: true, force: true });
    },
  };
}

interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  readonly comm: string;
}

async function processTable(): Promise<ProcessEntry[]> {
  const entries: ProcessEntry[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8');
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split at the last ')'.
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      entries.push({ pid: Number(name), ppid, comm });
    } catch {
      // The process ended while we looked.
    }
  }
  return entries;
}

/**
 * The sshd processes below the listener (per-connection monitor, session and OpenSSH ≥ 9.8 `sshd-session`
 * processes), not the commands they started: those must outlive the connection, as on a real host.
 */
async function sshdDescendants(listener: number): Promise<number[]> {
  const table = await processTable();
  const children = new Map<number, ProcessEntry[]>();
  for (const entry of table) children.set(entry.ppid, [...(children.get(entry.ppid) ?? []), entry]);
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      if (!child.comm.startsWith('sshd')) continue;
      found.push(child.pid);
      walk(child.pid);
    }
  };
  walk(listener);
  return found;
}

/** Resolves once `file` exists (or, with `present` false, no longer exists); gives up after 20 s. */
async function fileState(file: string, present: boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (existsSync(file) !== present) {
    if (Date.now() > deadline) throw new Error(`${file} did not ${present ? 'appear' : 'go away'} within 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function waitUntilGone(pids: readonly number[]): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const alive = pids.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
    if (alive.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
