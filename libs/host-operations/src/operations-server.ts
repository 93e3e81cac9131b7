import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenFor } from './port-taken';
import type { ProcessMetrics } from './process-metrics';

/** One condition `/readyz` checks: `undefined` when met, else why not (said in the answer, never a secret). */
export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<string | undefined>;
}

/** How long one readiness check may take before it counts as failed. */
const CHECK_BOUND_MS = 2_000;

/**
 * The operations listener of one process, apart from the MCP endpoint: `/metrics` (Prometheus text format),
 * `/healthz` (the process answers: 200) and `/readyz` (200 when every readiness check of the services it runs is met,
 * else 503 naming the ones that are not). It answers GET and HEAD only and reads no request body.
 */
export class OperationsServer {
  private server: Server | undefined;
  private readonly checks: ReadinessCheck[] = [];

  constructor(
    private readonly metrics: ProcessMetrics,
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** Adds a condition of readiness (the store reachable, the vault unlocked, a consumer caught up). */
  ready(check: ReadinessCheck): void {
    this.checks.push(check);
  }

  async listen(): Promise<string> {
    this.metrics.collectProcessMetrics();
    const server = createServer((req, res) => {
      void this.answer(req.method ?? 'GET', (req.url ?? '/').split('?')[0]!)
        .then(({ status, type, body }) => {
          res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
          res.end(req.method === 'HEAD' ? undefined : body);
        })
        .catch(() => {
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
          res.end('internal error\n');
        });
    });
    this.server = server;
    await listenFor('operations', server, this.host, this.port);
    const { address, port } = server.address() as AddressInfo;
    return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  }

  private async answer(method: string, path: string): Promise<{ status: number; type: string; body: string }> {
    const text = 'text/plain; charset=utf-8';
    if (method !== 'GET' && method !== 'HEAD') return { status: 405, type: text, body: 'use GET\n' };
    switch (path) {
      case '/metrics':
        return { status: 200, type: this.metrics.registry.contentType, body: await this.metrics.registry.metrics() };
      case '/healthz':
        return { status: 200, type: text, body: 'ok\n' };
      case '/readyz': {
        const results = await Promise.all(this.checks.map(async (check) => ({ name: check.name, problem: await bounded(check) })));
        const failing = results.filter((result) => result.problem !== undefined);
        const lines = results.map((result) => `${result.problem === undefined ? 'ok' : 'not ready'} ${result.name}${result.problem === undefined ? '' : `: ${result.problem}`}`);
        return { status: failing.length === 0 ? 200 : 503, type: text, body: `${lines.join('\n')}\n` };
      }
      default:
        return { status: 404, type: text, body: 'not found: /metrics, /healthz or /readyz\n' };
    }
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

async function bounded(check: ReadinessCheck): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      check.check().catch((error: unknown) => (error as Error).message || 'failed'),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`no answer within ${CHECK_BOUND_MS / 1000} s`), CHECK_BOUND_MS))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
