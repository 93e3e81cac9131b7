import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ToolContract } from '@oncegate/contracts';
import { DEFAULT_USER_AGENT, HttpDispatcher } from './http-dispatcher';
import { renderHttpRequest } from './render-http-request';
import type { HttpAttemptResult, HttpCredential } from './http-attempt';
import { closedPort, httpTarget, rawTarget, unacceptingPort } from './loopback-servers';
import { httpTool } from './test-tools';

const EXECUTION = 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E';
const CANARY = 'canary-8f3a9c1e5b7d2046aa91';
const CREDENTIAL: HttpCredential = { headers: { Authorization: `Bearer ${CANARY}` } };

/** An irreversible POST to `origin` with the given limits (YAML flow mapping). */
function paymentTool(origin: string, limits = '{ connect_timeout: 1s, response_timeout: 2s }'): ToolContract {
  return httpTool(`
class: irreversible
credential_ref: test-payments
input_schema:
  type: object
  properties:
    amount_cents: { type: integer }
    currency: { type: string, default: EUR }
    note: { type: string }
  required: [amount_cents]
http:
  method: POST
  url: ${origin}/payments
  body: { amount_cents: "{{args.amount_cents}}", currency: "{{args.currency}}", note: "{{args.note}}" }
  idempotency_header: Idempotency-Key
limits: ${limits}
`);
}

function readTool(origin: string, limits = '{ connect_timeout: 1s, response_timeout: 2s }'): ToolContract {
  return httpTool(`
class: read_only
input_schema: { type: object, properties: { id: { type: string } }, required: [id] }
http: { method: GET, url: "${origin}/builds/{{args.id}}" }
limits: ${limits}
`);
}

function text(result: HttpAttemptResult): string {
  return result.kind === 'response' ? new TextDecoder().decode(result.body) : '';
}

describe('HttpDispatcher', () => {
  let dispatcher: HttpDispatcher;
  const cleanups: (() => Promise<void>)[] = [];

  beforeEach(() => {
    dispatcher = new HttpDispatcher();
  });

  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
    await dispatcher.close();
  });

  async function target(...args: Parameters<typeof httpTarget>) {
    const server = await httpTarget(...args);
    cleanups.push(server.close);
    return server;
  }

  describe('given the target answers', () => {
    it('when it answers 200, then the attempt succeeded with the body, and the request carried the idempotency key, credential and JSON body', async () => {
      const server = await target((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"payment_id":"pay_1"}');
      });

      const result = await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(server.origin), arguments: { amount_cents: 500 }, credential: CREDENTIAL });

      expect(result).toMatchObject({ kind: 'response', outcome: 'succeeded', status: 200, truncated: false, contentType: 'application/json' });
      expect(text(result)).toBe('{"payment_id":"pay_1"}');
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]).toMatchObject({
        method: 'POST',
        url: '/payments',
        body: '{"amount_cents":500,"currency":"EUR"}',
        headers: {
          'idempotency-key': EXECUTION,
          authorization: `Bearer ${CANARY}`,
          'content-type': 'application/json',
          'user-agent': DEFAULT_USER_AGENT,
        },
      });
    });

    it('when it echoes the credential in its body, then the body handed back holds no secret value', async () => {
      const password = 'basic-pass-3c9e71aa';
      const basic = Buffer.from(`svc:${password}`).toString('base64');
      const server = await target((request, response) => {
        response.writeHead(401, { 'content-type': 'text/plain' }).end(`invalid credentials ${request.headers.authorization} (password ${password}, ${basic})`);
      });

      const result = await dispatcher.send({
        executionId: EXECUTION,
        tool: paymentTool(server.origin),
        arguments: { amount_cents: 1 },
        credential: { headers: { Authorization: `Basic ${basic}` }, secrets: [`svc:${password}`, password] },
      });

      expect(result).toMatchObject({ kind: 'response', outcome: 'failed', status: 401 });
      expect(text(result)).toBe('invalid credentials [redacted] (password [redacted], [redacted])');
    });

    it('when given a rendered request and the credential as bytes, then it sends that rendering with the header, hides the echoed secret and zero-fills the bytes', async () => {
      const server = await target((request, response) => {
        response.writeHead(401, { 'content-type': 'text/plain' }).end(`echo ${request.headers.authorization} and ${CANARY}`);
      });
      const tool = paymentTool(server.origin);
      const rendered = renderHttpRequest(tool, { amount_cents: 7 }, EXECUTION);
      const value = Buffer.from(`Bearer ${CANARY}`);
      const secret = Buffer.from(CANARY);

      // Arguments that would render another request: the rendering given is what is sent.
      const result = await dispatcher.send({ executionId: EXECUTION, tool, arguments: { amount_cents: 999 }, rendered, credential: { header: 'Authorization', value, secrets: [secret] } });

      expect(server.requests[0]).toMatchObject({ body: '{"amount_cents":7,"currency":"EUR"}', headers: { authorization: `Bearer ${CANARY}` } });
      expect(text(result)).toBe('echo [redacted] and [redacted]');
      expect(value.every((byte) => byte === 0)).toBe(true);
    });

    it.each([
      [404, 'failed'],
      [409, 'failed'],
      [500, 'failed'],
      [503, 'failed'],
    ])('when it answers %i, then the attempt is a definite %s response', async (status, outcome) => {
      const server = await target((_request, response) => response.writeHead(status).end('no'));

      const result = await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(server.origin), arguments: { amount_cents: 1 } });

      expect(result).toMatchObject({ kind: 'response', outcome, status });
    });

    it.each([[502], [504]])('when an intermediary answers %i, then the outcome is unknown: the origin may have acted', async (status) => {
      const server = await target((_request, response) => response.writeHead(status).end('bad gateway'));

      const result = await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(server.origin), arguments: { amount_cents: 1 } });

      expect(result).toEqual({ kind: 'unknown', reason: 'timeout_after_send', detail: expect.stringContaining(`gateway status ${status}`) });
    });

    it('when it redirects, then the 302 is returned as a failed response and the credential is never sent to the new location', async () => {
      const elsewhere = await target((_request, response) => response.writeHead(200).end('moved here'));
      const server = await target((_request, response) => response.writeHead(302, { location: `${elsewhere.origin}/payments` }).end());

      const result = await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(server.origin), arguments: { amount_cents: 1 }, credential: CREDENTIAL });

      expect(result).toMatchObject({ kind: 'response', outcome: 'failed', status: 302, headers: { location: `${elsewhere.origin}/payments` } });
      expect(elsewhere.requests).toHaveLength(0);
    });

    it('when the body is larger than limits.response_bytes, then the first bytes come back marked truncated', async () => {
      const server = await target((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end('x'.repeat(1024) + 'y'.repeat(2 * 1024 * 1024));
      });
      const tool = readTool(server.origin, '{ response_bytes: 1KiB, connect_timeout: 1s, response_timeout: 5s }');

      const result = await dispatcher.send({ executionId: EXECUTION, tool, arguments: { id: '7' } });

      expect(result).toMatchObject({ kind: 'response', outcome: 'succeeded', status: 200, truncated: true });
      expect(text(result)).toBe('x'.repeat(1024));
    });

    it('when the status arrived but the body stalls past response_timeout, then the status stands and the body is marked truncated', async () => {
      const server = await target((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.write('partial');
      });
      const tool = readTool(server.origin, '{ connect_timeout: 1s, response_timeout: 300ms }');

      const result = await dispatcher.send({ executionId: EXECUTION, tool, arguments: { id: '7' } });

      expect(result).toMatchObject({ kind: 'response', outcome: 'succeeded', status: 200, truncated: true });
      expect(text(result)).toBe('partial');
    });

    it('when attempts go to the same origin one after the other, then keep-alive connections are reused', async () => {
      const server = await target((_request, response) => response.writeHead(200).end('ok'));
      const tool = readTool(server.origin);

      const ids = ['1', '2', '3', '4', '5', '6'];
      for (const id of ids) await dispatcher.send({ executionId: EXECUTION, tool, arguments: { id } });

      expect(server.requests.map((request) => request.url)).toEqual(ids.map((id) => `/builds/${id}`));
      // undici frees a connection one event-loop turn after its response ends, so an attempt sent the moment the
      // previous one resolved takes a second connection; after that the two are reused.
      expect(server.connections()).toBeLessThanOrEqual(2);
    });
  });

  describe('given no byte of the request can leave', () => {
    it('when nothing listens on the port, then the attempt is not_sent (connection refused)', async () => {
      const port = await closedPort();

      const result = await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(`http://127.0.0.1:${port}`), arguments: { amount_cents: 1 }, credential: CREDENTIAL });

      expect(result).toEqual({ kind: 'not_sent', reason: expect.stringContaining('connection refused') });
    });

    it('when the connection cannot be made within connect_timeout, then the attempt is not_sent (connect timeout)', async () => {
      const unaccepting = await unacceptingPort();
      cleanups.push(unaccepting.close);
      const tool = paymentTool(`http://127.0.0.1:${unaccepting.port}`, '{ connect_timeout: 300ms, response_timeout: 2s }');

      const result = await dispatcher.send({ executionId: EXECUTION, tool, arguments: { amount_cents: 1 } });

      expect(result).toEqual({ kind: 'not_sent', reason: expect.stringContaining('connect timeout') });
    });

    it('when the request cannot be rendered, then the attempt is not_sent and no connection is made', async () => {
      const server = await target((_request, response) => response.writeHead(200).end());
      const tool = readTool(server.origin);

      const result = await dispatcher.send({ executionId: EXECUTION, tool, arguments: { id: '..' } });

      expect(result).toEqual({ kind: 'not_sent', reason: expect.stringContaining('could not render the request') });
      expect(server.connections()).toBe(0);
    });

    it('when the dispatcher is closed, then the attempt is not_sent', async () => {
      await dispatcher.close();

      const result = await dispatcher.send({ executionId: EXECUTION, tool: readTool('http://127.0.0.1:9'), arguments: { id: '1' } });

      expect(result).toMatchObject({ kind: 'not_sent' });
    });
  });

  describe('given the request was written', () => {
    it('when the target reads it and never answers, then after response_timeout the outcome is unknown (timeout_after_send)', async () => {
      const server = await rawTarget('never_answer');
      cleanups.push(server.close);
      const tool = paymentTool(server.origin, '{ connect_timeout: 1s, response_timeout: 300ms }');

      const result = await dispatcher.send({ executionId: EXECUTION, tool, arguments: { amount_cents: 1 } });

      expect(result).toEqual({ kind: 'unknown', reason: 'timeout_after_send', detail: expect.stringContaining('300 ms') });
      expect(server.received()).toHaveLength(1);
    });

    it('when the target is slower than response_timeout, then the outcome is unknown although it did receive the request', async () => {
      const server = await target((_request, response) => setTimeout(() => response.writeHead(200).end('late'), 1_000));
      const tool = paymentTool(server.origin, '{ connect_timeout: 1s, response_timeout: 200ms }');

      const result = await dispatcher.send({ executionId: EXECUTION, tool, arguments: { amount_cents: 1 } });

      expect(result).toMatchObject({ kind: 'unknown', reason: 'timeout_after_send' });
      expect(server.requests).toHaveLength(1);
    });

    it('when the target resets the connection after reading the body, then the outcome is unknown (connection_reset)', async () => {
      const server = await rawTarget('reset');
      cleanups.push(server.close);

      const result = await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(server.origin), arguments: { amount_cents: 9 } });

      expect(result).toMatchObject({ kind: 'unknown', reason: 'connection_reset' });
      expect(server.received()[0]).toContain('{"amount_cents":9,"currency":"EUR"}');
    });
  });

  describe('given a credential', () => {
    it('when the target echoes it back in headers and cookies, and whatever the attempt ends in, then no result holds it', async () => {
      const echo = await target((request, response) => {
        response.writeHead(200, {
          'x-echo-authorization': String(request.headers.authorization),
          'x-echo-token': CANARY,
          'set-cookie': `session=${CANARY}`,
        });
        response.end('ok');
      });
      const reset = await rawTarget('reset');
      const silent = await rawTarget('never_answer');
      cleanups.push(reset.close, silent.close);
      const refused = await closedPort();
      const quick = '{ connect_timeout: 1s, response_timeout: 200ms }';
      const badCredential: HttpCredential = { headers: { Authorization: `Bearer ${CANARY}\r\nX-Injected: 1` } };

      const results = [
        await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(echo.origin), arguments: { amount_cents: 1 }, credential: CREDENTIAL }),
        await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(reset.origin), arguments: { amount_cents: 1 }, credential: CREDENTIAL }),
        await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(silent.origin, quick), arguments: { amount_cents: 1 }, credential: CREDENTIAL }),
        await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(`http://127.0.0.1:${refused}`), arguments: { amount_cents: 1 }, credential: CREDENTIAL }),
        await dispatcher.send({ executionId: EXECUTION, tool: paymentTool(echo.origin), arguments: { amount_cents: 1 }, credential: badCredential }),
      ];

      expect(results.map((result) => result.kind)).toEqual(['response', 'unknown', 'unknown', 'not_sent', 'not_sent']);
      for (const result of results) expect(JSON.stringify(result)).not.toContain(CANARY);
      expect(results[0]).toMatchObject({ headers: { 'x-echo-authorization': '[redacted]', 'x-echo-token': '[redacted]' } });
      expect(results[0]?.kind === 'response' && results[0].headers).not.toHaveProperty('set-cookie');
      expect(echo.requests).toHaveLength(1);
    });
  });
});
