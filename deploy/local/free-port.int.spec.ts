import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { freePort } from './free-port';

const ephemeralLow = () => Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

describe('freePort', () => {
  afterEach(() => vi.restoreAllMocks());

  it("given the kernel's ephemeral range, then every port given is below it (nothing listening on port 0 or connecting out takes it by chance) and can be bound", async () => {
    const low = ephemeralLow();
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) expect(port).toBeLessThan(low);
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(ports[0], '127.0.0.1', () => resolve()));
    await new Promise((resolve) => server.close(resolve));
  });

  it('given a draw that falls on 10080, a port the Fetch Standard blocks, then another is given, which fetch reaches', async () => {
    const low = ephemeralLow();
    const draws = [(10_080 - 10_000 + 0.5) / (low - 10_000), 0.5];
    vi.spyOn(Math, 'random').mockImplementation(() => draws.shift() ?? 0.5);
    const port = await freePort();
    vi.restoreAllMocks();
    expect(port).not.toBe(10_080);
    const server = createHttpServer((_request, response) => response.writeHead(204).end());
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
    try {
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(204);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
