import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { FaultProxy, type ConformanceOptions, type ConformanceSubject } from '@oncegate/dispatcher-kit/testing';
import { httpKit } from '../http-channel';

/**
 * A loopback HTTP target that counts each execution's effects (by the execution id each request carries): items
 * set by PUT with an Idempotency-Key (a repeated key is answered from the first time, without a second effect),
 * payments posted (every POST is an effect), component versions moved by PUT (a status query reads them), items read.
 */
async function startTarget(): Promise<{ port: number; effects: Map<string, number>; server: Server }> {
  const effects = new Map<string, number>();
  const answered = new Map<string, string>();
  const versions = new Map<string, number>();
  const count = (executionId: string) => effects.set(executionId, (effects.get(executionId) ?? 0) + 1);
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length === 0 ? {} : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
      const reply = (status: number, value: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      const [, kind, id] = (request.url ?? '').split('/');
      if (request.method === 'GET' && kind === 'items') return reply(200, { id, price: 100 });
      if (request.method === 'GET' && kind === 'echo') return response.writeHead(200, { 'content-type': 'text/plain' }).end(`${'.'.repeat(Number(id))}seen ${String(request.headers['authorization'])}`);
      if (request.method === 'GET' && kind === 'versions') return reply(200, { version: versions.get(id!) ?? 1 });
      if (request.method === 'PUT' && kind === 'items') {
        const key = String(request.headers['idempotency-key']);
        const earlier = answered.get(key);
        if (earlier !== undefined) return response.writeHead(200, { 'content-type': 'application/json' }).end(earlier);
        count(String(body['execution']));
        answered.set(key, JSON.stringify({ id, price: body['price'] }));
        return response.writeHead(200, { 'content-type': 'application/json' }).end(answered.get(key));
      }
      if (request.method === 'POST' && kind === 'payments') {
        count(String(body['execution']));
        return reply(201, { payment: randomBytes(4).toString('hex') });
      }
      if (request.method === 'PUT' && kind === 'versions') {
        if ((versions.get(id!) ?? 1) !== body['from']) return reply(409, { error: 'version moved' });
        versions.set(id!, body['to'] as number);
        count(String(body['execution']));
        return reply(200, { version: body['to'] });
      }
      return reply(404, { error: 'no such resource' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, effects, server };
}

function contract(origin: string): string {
  const tool = (operationClass: string, lines: string) => `  - name: conformance_${operationClass}
    description: The ${operationClass} tool of the conformance run.
    class: ${operationClass}
    channel: http
    target: test/conformance
    credential_ref: conformance-token
    correlation_window: 10m
    limits: { connect_timeout: 2s, response_timeout: 2s }
${lines}`;
  return `version: 1
tools:
${tool('read_only', `    input_schema: { type: object, properties: { pad: { type: integer } }, required: [pad], additionalProperties: false }
    http: { method: GET, url: "${origin}/echo/{{args.pad}}" }`).replace('conformance_read_only', 'conformance_echo').replace('limits: { connect_timeout: 2s, response_timeout: 2s }', 'limits: { connect_timeout: 2s, response_timeout: 2s, response_bytes: 40B }')}
${tool('read_only', `    input_schema: { type: object, properties: { id: { type: string } }, required: [id], additionalProperties: false }
    http: { method: GET, url: "${origin}/items/{{args.id}}" }`)}
${tool('idempotent_write', `    input_schema: { type: object, properties: { id: { type: string }, price: { type: integer } }, required: [id, price], additionalProperties: false }
    http: { method: PUT, url: "${origin}/items/{{args.id}}", body: { price: "{{args.price}}", execution: "{{execution.id}}" }, idempotency_header: Idempotency-Key }`)}
${tool('irreversible', `    input_schema: { type: object, properties: { payee: { type: string } }, required: [payee], additionalProperties: false }
    http: { method: POST, url: "${origin}/payments/", body: { payee: "{{args.payee}}", execution: "{{execution.id}}" } }`)}
${tool('conditional_write', `    input_schema: { type: object, properties: { component: { type: string }, from: { type: integer }, to: { type: integer } }, required: [component, from, to], additionalProperties: false }
    http: { method: PUT, url: "${origin}/versions/{{args.component}}", body: { from: "{{args.from}}", to: "{{args.to}}", execution: "{{execution.id}}" } }
    status_query:
      http: { url: "${origin}/versions/{{args.component}}" }
      precondition: { pointer: /version, equals: "{{args.from}}" }`)}
`;
}

/** The HTTP channel against a real loopback HTTP server (through a fault proxy), as the conformance suite takes it. */
export const openHttpConformanceSubject = async (): Promise<ConformanceSubject> => {
    const target = await startTarget();
    const proxy = await FaultProxy.start(target.port);
    return {
      kit: httpKit,
      // The answer is cut at 40 bytes, somewhere inside the echoed credential: no piece of it may be left.
      echo: { args: { pad: 17 } },
      contract: contract(`http://127.0.0.1:${proxy.port}`),
      credential: { ref: 'conformance-token', kind: 'bearer', bindings: [`127.0.0.1:${proxy.port}`], value: `http-canary-${randomBytes(9).toString('hex')}` },
      target: {
        effects: async (executionId) => target.effects.get(executionId) ?? 0,
        // The request reaches the target and takes effect; its answer is lost.
        loseNextAnswer: () => proxy.loseNextAnswer('HTTP/1.1\r\n'),
        withholdNextAnswer: () => proxy.withholdNextAnswer('HTTP/1.1\r\n'),
        faultStruck: () => proxy.whenFired(),
        unreachable: (on) => proxy.refuse(on),
      },
      args: (operationClass, n) => {
        switch (operationClass) {
          case 'read_only':
            return { id: `item-${n}` };
          case 'idempotent_write':
            return { id: `item-${n}`, price: 100 + n };
          case 'irreversible':
            return { payee: `payee-${n}` };
          default:
            return { component: `component-${n}`, from: 1, to: 2 };
        }
      },
      async close() {
        await proxy.stop();
        await new Promise((resolve) => target.server.close(resolve));
      },
    };
  };

/** The classes the HTTP channel declares. */
export const HTTP_CONFORMANCE: ConformanceOptions = { classes: ['read_only', 'idempotent_write', 'conditional_write', 'irreversible'] };
