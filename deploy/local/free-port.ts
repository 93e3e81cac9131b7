import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The lowest port tried below the system's ephemeral range. */
const LOWEST = 10_000;

/**
 * The ports at or above `LOWEST` that the Fetch Standard blocks (https://fetch.spec.whatwg.org/#block-bad-port):
 * Node's `fetch` fails on them with "bad port" and browsers refuse them, so a gateway given one cannot be reached.
 */
const BLOCKED = new Set([10_080]);

/**
 * The lowest port the kernel takes for a listener on port 0 and for the local end of an outgoing connection (Linux:
 * the first of `ip_local_port_range`); `undefined` where it cannot be read.
 */
function ephemeralLow(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : undefined;
  } catch {
    return undefined;
  }
}

/** Binds `port` on 127.0.0.1 and lets it go: the port it had (the kernel's choice for 0), or `undefined` when taken. */
function tryPort(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' || error.code === 'EACCES' ? resolve(undefined) : reject(error)));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A port free on 127.0.0.1 a moment ago (a server bound to it then let go), for a process that binds it a moment
 * later. Drawn at random below the kernel's ephemeral range, so that nothing started meanwhile takes it by chance:
 * neither a server listening on port 0 nor the local end of a connection (both come from that range); never a port
 * `fetch` refuses. Where the range cannot be read, or nothing below it is free, the kernel picks.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  if (low !== undefined && low > LOWEST + 1_000) {
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const drawn = LOWEST + Math.floor(Math.random() * (low - LOWEST));
      if (BLOCKED.has(drawn)) continue;
      const port = await tryPort(drawn);
      if (port !== undefined) return port;
    }
  }
  return (await tryPort(0))!;
}
