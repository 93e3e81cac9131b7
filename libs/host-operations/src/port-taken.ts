import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { Server } from 'node:net';
import { basename } from 'node:path';

/** The listeners a process may open, each with the setting that chooses its port. */
const LISTENERS = {
  mcp: { what: 'the MCP endpoint', key: 'listen.port', variable: 'ONCEGATE_PORT' },
  operations: { what: 'the operations endpoint', key: 'operations.port', variable: 'ONCEGATE_OPS_PORT' },
} as const;

export type ListenerName = keyof typeof LISTENERS;

/** The process that listens on a port, as it may be shown: never its arguments, which may hold a secret. */
export interface PortHolder {
  readonly pid: number;
  /** `oncegate serve <service>`, `oncegate start`, `the <service> app`, or the program's name. */
  readonly program: string;
}

/** A listener's port is taken by another process: names the setting that chooses it and, when known, who holds it. */
export class PortTakenError extends Error {
  readonly kind = 'port_taken' as const;
  constructor(
    readonly listener: ListenerName,
    readonly host: string,
    readonly port: number,
    /** `undefined` when it cannot be told (another user's process, a system without `/proc`). */
    readonly holder: PortHolder | undefined,
  ) {
    const { what, key, variable } = LISTENERS[listener];
    const by = holder === undefined ? '' : ` by process ${holder.pid} (${holder.program})`;
    super(`cannot listen on ${host}:${port} for ${what}: the port is taken${by} (EADDRINUSE); set ${key} or ${variable} to a port of its own for each process on this machine`);
    this.name = 'PortTakenError';
  }
}

/** Listens on `host:port`; a port another process holds fails with a `PortTakenError` for `listener`. */
export async function listenFor(listener: ListenerName, server: Server, host: string, port: number): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    throw new PortTakenError(listener, host, port, portHolder(port));
  }
}

/** TCP state `0A` in /proc/net/tcp*: a listening socket. */
const LISTEN_STATE = '0A';

/**
 * The process listening on a TCP port, found the way `ss -p` finds it: the socket's inode in /proc/net/tcp (and tcp6),
 * then the process one of whose descriptors is that socket. Linux only, and only processes this user may look into;
 * otherwise `undefined`. Asked only once a listen has failed, so its cost (a read of each process's descriptors) is paid
 * by a start that is failing anyway.
 */
export function portHolder(port: number, proc = '/proc'): PortHolder | undefined {
  const sockets = new Set<string>();
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`${proc}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      if (local === undefined || fields[3] !== LISTEN_STATE || fields[9] === undefined) continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) sockets.add(`socket:[${fields[9]}]`);
    }
  }
  if (sockets.size === 0) return undefined;
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let descriptors: string[];
    try {
      descriptors = readdirSync(`${proc}/${pid}/fd`);
    } catch {
      // Another user's process, or one that ended meanwhile.
      continue;
    }
    for (const descriptor of descriptors) {
      let target: string;
      try {
        target = readlinkSync(`${proc}/${pid}/fd/${descriptor}`);
      } catch {
        continue;
      }
      if (sockets.has(target)) return { pid: Number(pid), program: programOf(`${proc}/${pid}`) };
    }
  }
  return undefined;
}

/** An Oncegate process by what it runs (`oncegate serve authorization`), any other by its program's name alone. */
function programOf(processDir: string): string {
  let args: string[] = [];
  try {
    args = readFileSync(`${processDir}/cmdline`, 'utf8').split('\0');
  } catch {
    // Named by comm below.
  }
  const launcher = args.findIndex((arg) => /(^|\/)oncegate(\.mjs)?$|\/dist\/apps\/oncegate\/main\.js$/.test(arg));
  if (launcher >= 0) {
    const [command, service] = args.slice(launcher + 1);
    if (command === 'serve' && service !== undefined && /^[a-z-]+$/.test(service)) return `oncegate serve ${service}`;
    if (command !== undefined && /^[a-z-]+$/.test(command)) return `oncegate ${command}`;
    return 'oncegate';
  }
  const app = args.map((arg) => /\/dist\/apps\/([a-z-]+)\/main\.js$/.exec(arg)?.[1]).find((name) => name !== undefined);
  if (app !== undefined) return `the ${app} app`;
  // The executable's name (its path names no secret); `comm` would not do: Node renames its main thread `MainThread`.
  try {
    return basename(readlinkSync(`${processDir}/exe`));
  } catch {
    return args[0] ? basename(args[0]) : 'a process';
  }
}
