import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { listenFor, portHolder, PortTakenError } from './port-taken';

describe('a port another listener holds', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) if (server.listening) await new Promise((resolve) => server.close(resolve));
  });
  const listening = async (host: string, port = 0): Promise<number> => {
    const server = createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    return (server.address() as { port: number }).port;
  };

  it('given a listener on an IPv4 or an IPv6 address, when its port is looked up, then its process is found, named by its program', async () => {
    for (const host of ['127.0.0.1', '::1']) {
      const port = await listening(host).catch(() => undefined);
      // A machine without IPv6 on loopback has nothing to find there.
      if (port === undefined) continue;
      expect(portHolder(port), host).toEqual({ pid: process.pid, program: 'node' });
    }
  });

  it('given a port nobody listens on, when it is looked up, then no holder is named', async () => {
    const port = await listening('127.0.0.1');
    await new Promise((resolve) => servers.pop()!.close(resolve));
    expect(portHolder(port)).toBeUndefined();
  });

  it('given the operations listener on a taken port, when it listens, then the error names operations.port and ONCEGATE_OPS_PORT and the holder', async () => {
    const port = await listening('127.0.0.1');
    const second = createServer();
    servers.push(second);
    const error = await listenFor('operations', second, '127.0.0.1', port).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(PortTakenError);
    expect(error).toMatchObject({ kind: 'port_taken', listener: 'operations', host: '127.0.0.1', port, holder: { pid: process.pid, program: 'node' } });
    expect((error as Error).message).toBe(
      `cannot listen on 127.0.0.1:${port} for the operations endpoint: the port is taken by process ${process.pid} (node) (EADDRINUSE); ` +
        'set operations.port or ONCEGATE_OPS_PORT to a port of its own for each process on this machine',
    );
  });
});
