import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './gateway-process';
import { goTool } from './go-tools';

/** One span as the collector passed it on (OTLP/JSON), with the service that sent it. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Readonly<Record<string, unknown>>;
}

/** A real OpenTelemetry Collector (tools/otelcol) receiving OTLP on loopback, and what it forwarded. */
export interface CollectorHandle {
  /** The OTLP/HTTP endpoint to configure (`tracing.endpoint`). */
  readonly endpoint: string;
  /** Every span the collector forwarded so far. */
  spans(): readonly ReceivedSpan[];
  /** Every raw OTLP/JSON body it forwarded, for the secret checks. */
  bodies(): readonly string[];
  stop(): Promise<void>;
}

interface OtlpJson {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: Record<string, unknown> }> };
    scopeSpans?: Array<{ spans?: Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string; kind?: number; attributes?: Array<{ key: string; value: Record<string, unknown> }> }> }>;
  }>;
}

const valueOf = (value: Record<string, unknown>): unknown => Object.values(value)[0];

/**
 * Starts the collector with an OTLP receiver (HTTP, on a free loopback port) whose traces pipeline exports, as
 * OTLP/JSON over HTTP, to a server of this test process: the spans are read as the collector passed them on. With
 * `forward: false` it drops what it receives (a benchmark's receiver, costing the machine as little as it can).
 */
export async function startCollector(options: { readonly forward?: boolean } = {}): Promise<CollectorHandle> {
  const forward = options.forward ?? true;
  const binary = await goTool('otelcol', 'the traces are received by an OpenTelemetry Collector');
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const sink: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += String(chunk)));
    req.on('end', () => {
      bodies.push(body);
      const request = JSON.parse(body) as OtlpJson;
      for (const resourceSpans of request.resourceSpans ?? []) {
        const service = String(valueOf(resourceSpans.resource?.attributes?.find((attribute) => attribute.key === 'service.name')?.value ?? {}) ?? '');
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind ?? 0,
              attributes: Object.fromEntries((span.attributes ?? []).map((attribute) => [attribute.key, valueOf(attribute.value)])),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const sinkPort = (sink.address() as AddressInfo).port;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'oncegate-otelcol-run-'));
  const config = join(dir, 'collector.yaml');
  writeFileSync(
    config,
    [
      'receivers:',
      '  otlp:',
      '    protocols:',
      `      http: { endpoint: "127.0.0.1:${port}" }`,
      'exporters:',
      '  nop: {}',
      '  otlp_http:',
      `    endpoint: "http://127.0.0.1:${sinkPort}"`,
      '    encoding: json',
      '    compression: none',
      '    sending_queue: { enabled: false }',
      'service:',
      '  telemetry:',
      '    metrics: { level: none }',
      '  pipelines:',
      `    traces: { receivers: [otlp], exporters: [${forward ? 'otlp_http' : 'nop'}] }`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(binary, ['--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the collector did not start:\n${log}`)), 60_000);
    const watch = (chunk: Buffer) => {
      log += String(chunk);
      if (log.includes('Everything is ready')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', watch);
    child.stderr!.on('data', watch);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the collector exited with ${code}:\n${log}`));
    });
  });
  await ready;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => spans,
    bodies: () => bodies,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      await new Promise<void>((resolve) => sink.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
