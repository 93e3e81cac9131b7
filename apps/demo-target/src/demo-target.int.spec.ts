import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDemoTarget } from './demo-target';
import type { DemoTarget } from './demo-target';

const agent = new Agent({ keepAliveTimeout: 1_000 });
afterAll(() => agent.close());

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Record<string, unknown>;
}

async function call(
  target: DemoTarget,
  method: 'GET' | 'PUT' | 'POST',
  path: string,
  options: { body?: unknown; key?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  const response = await request(`${target.url}${path}`, {
    method,
    dispatcher: agent,
    headers: { 'content-type': 'application/json', ...(options.key === undefined ? {} : { 'idempotency-key': options.key }) },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    headersTimeout: options.timeoutMs ?? 5_000,
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!condition()) throw new Error('condition not reached');
}

const PAYMENT = { reference: 'order-0001', amount_cents: 1250, currency: 'EUR', card_token: 'tok_test_4242' };

describe('demo target', () => {
  let target: DemoTarget;

  beforeAll(async () => {
    target = await startDemoTarget({ port: 0, now: () => new Date('2026-07-28T10:00:00.000Z') });
  });

  afterEach(() => target.reset());

  afterAll(async () => {
    await target.close();
  });

  it('given a build read, then it is answered and counted as a request but not as an effect', async () => {
    const answer = await call(target, 'GET', '/builds/42');

    expect(answer).toMatchObject({ status: 200, body: { build_id: '42', status: 'passed' } });
    expect(target.effects()).toMatchObject({ total: 0, requestsTotal: 1, requests: [{ method: 'GET', path: '/builds/42', effect: false, status: 200 }] });
  });

  it('given two payments with the same Idempotency-Key, then both are charged: payments deliberately ignore the key', async () => {
    const first = await call(target, 'POST', '/payments', { body: PAYMENT, key: 'ex_same' });
    const second = await call(target, 'POST', '/payments', { body: PAYMENT, key: 'ex_same' });

    expect([first.status, second.status]).toEqual([201, 201]);
    expect(first.body['payment_id']).not.toBe(second.body['payment_id']);
    expect(target.effects()).toMatchObject({
      total: 2,
      byEndpoint: { 'POST /payments': 2, 'PUT /config/:name': 0 },
      requests: [
        { method: 'POST', path: '/payments', idempotencyKey: 'ex_same', at: '2026-07-28T10:00:00.000Z', effect: true },
        { effect: true },
      ],
    });
  });

  it('given a config write repeated with the same Idempotency-Key, then the stored answer is replayed and no new effect recorded', async () => {
    const first = await call(target, 'PUT', '/config/db.pool', { body: { value: '20' }, key: 'ex_1' });
    const again = await call(target, 'PUT', '/config/db.pool', { body: { value: '20' }, key: 'ex_1' });
    const reused = await call(target, 'PUT', '/config/db.pool', { body: { value: '30' }, key: 'ex_1' });

    expect(first).toMatchObject({ status: 200, body: { name: 'db.pool', value: '20', revision: 1 } });
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(reused).toMatchObject({ status: 422, body: { error: 'idempotency_key_reused' } });
    expect(target.effects()).toMatchObject({ total: 1, requestsTotal: 3, byEndpoint: { 'PUT /config/:name': 1 } });
  });

  it('given a stock update with a stale version, then it is refused with 409 and only the current-version write is an effect', async () => {
    expect(await call(target, 'GET', '/inventory/SKU-1')).toMatchObject({ status: 200, body: { sku: 'SKU-1', quantity: 0, version: 0 } });

    const applied = await call(target, 'PUT', '/inventory/SKU-1', { body: { quantity: 5, expected_version: 0 } });
    const stale = await call(target, 'PUT', '/inventory/SKU-1', { body: { quantity: 7, expected_version: 0 } });

    expect(applied).toMatchObject({ status: 200, body: { sku: 'SKU-1', quantity: 5, version: 1 } });
    expect(stale).toMatchObject({ status: 409, body: { error: 'version_conflict', expected_version: 0, version: 1 } });
    expect(await call(target, 'GET', '/inventory/SKU-1')).toMatchObject({ body: { quantity: 5, version: 1 } });
    expect(target.effects()).toMatchObject({ total: 1, byEndpoint: { 'PUT /inventory/:sku': 1 } });
  });

  it('given a credential rotation, then each request is a new generation and an effect', async () => {
    await call(target, 'POST', '/credentials/deploy-key/rotate');
    const second = await call(target, 'POST', '/credentials/deploy-key/rotate');

    expect(second).toMatchObject({ status: 200, body: { name: 'deploy-key', generation: 2 } });
    expect(target.effects().byEndpoint['POST /credentials/:name/rotate']).toBe(2);
  });

  it('given a hold on payments, then the charge is applied at once but the answer waits for release', async () => {
    target.hold('POST /payments');
    let answered = false;
    const pending = call(target, 'POST', '/payments', { body: PAYMENT }).then((answer) => {
      answered = true;
      return answer;
    });

    await until(() => target.effects().total === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    expect(target.effects().requests[0]).toMatchObject({ effect: true, status: null, fault: 'hold' });

    expect(target.release('POST /payments')).toBe(1);
    expect(await pending).toMatchObject({ status: 201, body: { status: 'captured' } });
    // The hold rule went with the release: the next payment is answered straight away.
    expect(await call(target, 'POST', '/payments', { body: PAYMENT })).toMatchObject({ status: 201 });
  });

  it('given a one-shot hang set over HTTP, then the caller times out after sending, the effect happened, and the next call is answered', async () => {
    expect(await call(target, 'POST', '/_control/hang', { body: { match: 'POST /payments', times: 1 } })).toMatchObject({ status: 200 });

    await expect(call(target, 'POST', '/payments', { body: PAYMENT, timeoutMs: 300 })).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(target.effects()).toMatchObject({ total: 1, requests: [{ effect: true, status: null, fault: 'hang' }] });
    expect(await call(target, 'POST', '/payments', { body: PAYMENT })).toMatchObject({ status: 201 });
    expect(target.effects().total).toBe(2);
  });

  it('given a reset set over HTTP, then the connection drops after the body was read and the effect happened', async () => {
    await call(target, 'POST', '/_control/reset', { body: { match: 'PUT /config/:name', times: 1 } });

    const failure = await call(target, 'PUT', '/config/feature.x', { body: { value: 'on' }, key: 'ex_r' }).catch((error: unknown) => error);

    expect(failure).toMatchObject({ code: expect.stringMatching(/ECONNRESET|UND_ERR_SOCKET/) });
    expect(target.effects()).toMatchObject({ total: 1, requests: [{ path: '/config/feature.x', effect: true, fault: 'reset' }] });
    // The retry with the same key gets the stored answer: the write is not applied twice.
    expect(await call(target, 'PUT', '/config/feature.x', { body: { value: 'on' }, key: 'ex_r' })).toMatchObject({ status: 200, body: { revision: 1 } });
    expect(target.effects().total).toBe(1);
  });

  it('given injected statuses, then a 502 after the effect and a 503 before it are told apart in the log', async () => {
    target.behave({ match: 'POST /payments', action: 'status', status: 502, applyEffect: true, times: 1 });
    target.behave({ match: 'POST /payments', action: 'status', status: 503, times: 1 });

    expect((await call(target, 'POST', '/payments', { body: PAYMENT })).status).toBe(502);
    expect((await call(target, 'POST', '/payments', { body: PAYMENT })).status).toBe(503);
    expect(target.effects().requests.map(({ status, effect }) => ({ status, effect }))).toEqual([
      { status: 502, effect: true },
      { status: 503, effect: false },
    ]);
  });

  it('given effects and rules, when reset-state is posted, then everything is cleared', async () => {
    target.hold('POST /payments');
    await call(target, 'PUT', '/inventory/SKU-2', { body: { quantity: 1, expected_version: 0 } });

    expect(await call(target, 'POST', '/_control/reset-state', { body: {} })).toMatchObject({ status: 200 });

    expect(target.effects()).toMatchObject({ total: 0, requestsTotal: 0 });
    expect(await call(target, 'GET', '/inventory/SKU-2')).toMatchObject({ body: { version: 0 } });
    expect(await call(target, 'POST', '/payments', { body: PAYMENT })).toMatchObject({ status: 201 });
  });

  it('given GET /effects, then it reports what effects() reports and is not itself counted', async () => {
    await call(target, 'POST', '/payments', { body: PAYMENT });

    const answer = await call(target, 'GET', '/effects');

    expect(answer.body).toMatchObject({ total: 1, requestsTotal: 1, byEndpoint: { 'POST /payments': 1 } });
    expect(target.effects().requestsTotal).toBe(1);
  });

  it('given a malformed control request, then it is refused with the reason', async () => {
    const answer = await call(target, 'POST', '/_control/behave', { body: { match: 'payments', action: 'hold' } });

    expect(answer).toMatchObject({ status: 400, body: { error: 'bad_control_request', reason: expect.stringContaining('"match"') } });
  });
});

describe('demo target main', () => {
  it('given --port 0, then it prints its URL and serves /effects', async () => {
    const main = fileURLToPath(new URL('./main.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', main, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (data: Buffer) => resolve(String(data)));
        child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
      });
      const url = /http:\/\/127\.0\.0\.1:\d+/.exec(line)?.[0];
      expect(url).toBeDefined();

      const response = await request(`${url}/effects`, { dispatcher: agent });

      expect(await response.body.json()).toMatchObject({ total: 0, requestsTotal: 0 });
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('given --exit-with-stdin, when its standard input ends (whoever started it is gone), then it stops and frees its port', async () => {
    const main = fileURLToPath(new URL('./main.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', main, '--port', '0', '--exit-with-stdin'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (data: Buffer) => resolve(String(data)));
        child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
      });
      const url = /http:\/\/127\.0\.0\.1:\d+/.exec(line)![0];
      expect((await request(`${url}/effects`, { dispatcher: agent })).statusCode).toBe(200);
      child.stdin.end();
      expect(await exited).toBe(0);
      await expect(request(`${url}/effects`, { dispatcher: agent })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      child.kill('SIGTERM');
    }
  });
});
