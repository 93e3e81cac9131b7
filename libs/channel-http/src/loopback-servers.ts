import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect, createServer as createNetServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { Worker } from 'node:worker_threads';

/** Test support: real servers on 127.0.0.1 with ephemeral ports. Each `close()` also drops open connections. */
export interface LoopbackServer {
  readonly origin: string;
  readonly port: number;
  /** How many connections the server accepted. */
  connections(): number;
  close(): Promise<void>;
}

export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function tracked(server: Server): { sockets: Set<Socket>; count: () => number } {
  const sockets = new Set<Socket>();
  let count = 0;
  server.on('connection', (socket: Socket) => {
    count += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return { sockets, count: () => count };
}

function closer(server: Server, sockets: Set<Socket>): () => Promise<void> {
  return async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
}

/** An HTTP server answering with `handle`, which receives the full request body; every request is recorded. */
export async function httpTarget(
  handle: (request: SeenRequest, response: ServerResponse) => void,
): Promise<LoopbackServer & { readonly requests: SeenRequest[] }> {
  const requests: SeenRequest[] = [];
  const server = createHttpServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const seen = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(seen);
      handle(seen, response);
    });
  });
  const { sockets, count } = tracked(server);
  const port = await listen(server);
  return { origin: `http://127.0.0.1:${port}`, port, requests, connections: count, close: closer(server, sockets) };
}

/**
 * A TCP server that reads a whole HTTP request (headers and a `content-length` body), reports it, then does
 * `afterRequest` with the socket: never answer, or reset the connection.
 */
export async function rawTarget(afterRequest: 'never_answer' | 'reset'): Promise<LoopbackServer & { readonly received: () => string[] }> {
  const received: string[] = [];
  const server = createNetServer((socket) => {
    let buffer = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const text = buffer.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/content-length:\s*(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (buffer.length < end + 4 + length) return;
      received.push(text);
      buffer = Buffer.alloc(0);
      if (afterRequest === 'reset') socket.resetAndDestroy();
    });
  });
  const { sockets, count } = tracked(server);
  const port = await listen(server);
  return { origin: `http://127.0.0.1:${port}`, port, received: () => received, connections: count, close: closer(server, sockets) };
}

/** A port on 127.0.0.1 with nothing listening: connecting is refused. */
export async function closedPort(): Promise<number> {
  const server = createNetServer();
  const port = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const NEVER_ACCEPTING_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const net = require('node:net');
const server = net.createServer();
server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
  parentPort.postMessage(server.address().port);
  // Block this thread's event loop: the kernel completes a backlog's worth of handshakes, then drops SYNs.
  Atomics.wait(new Int32Array(workerData), 0, 0);
  server.close();
  process.exit(0);
});
`;

/**
 * A listening port whose accept queue is full, so a new connection attempt hangs until it times out — the
 * loopback stand-in for an unreachable host. The listener runs on a worker thread whose event loop is blocked,
 * so it never accepts.
 */
export async function unacceptingPort(): Promise<{ readonly port: number; close(): Promise<void> }> {
  const signal = new SharedArrayBuffer(4);
  const worker = new Worker(NEVER_ACCEPTING_WORKER, { eval: true, workerData: signal });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const fillers: Socket[] = [];
  // Fill the accept queue until a handshake no longer completes.
  for (let i = 0; i < 16; i++) {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    fillers.push(socket);
    const connected = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 200);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!connected) break;
  }
  return {
    port,
    close: async () => {
      for (const socket of fillers) socket.destroy();
      Atomics.notify(new Int32Array(signal), 0);
      await new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    },
  };
}
