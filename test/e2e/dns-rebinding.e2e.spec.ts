import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../support/journal';
import { gatewayScenario } from '../support/scenario';

/** A POST with headers fetch would not let a test set (`Host`). */
function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'rebinding', version: '1' } },
});

describe('DNS-rebinding protection on the MCP endpoint', () => {
  const scenario = gatewayScenario();

  it('given a valid agent token, when the request names a foreign Host or Origin, then 403 with a clear message and nothing is appended', async () => {
    const before = (await readJournal(scenario.folder.dataDir)).length;
    const port = new URL(scenario.gateway.url).port;
    const headers = {
      authorization: `Bearer ${scenario.gateway.devToken}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };

    const rebound = await post(scenario.gateway.url, { ...headers, host: 'evil.example', origin: 'http://evil.example' }, INITIALIZE);
    const foreignOrigin = await post(scenario.gateway.url, { ...headers, origin: `http://evil.example:${port}` }, INITIALIZE);

    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body)).toMatchObject({ error: { message: expect.stringMatching(/Host 'evil\.example' is not a name this gateway answers to/) } });
    expect(foreignOrigin.status).toBe(403);
    expect(foreignOrigin.body).toMatch(/Origin 'http:\/\/evil\.example:\d+' is not allowed/);
    expect((await readJournal(scenario.folder.dataDir)).length).toBe(before);

    const own = await post(scenario.gateway.url, { ...headers, origin: `http://127.0.0.1:${port}` }, INITIALIZE);
    expect(own.status).toBe(200);
    expect((await readJournal(scenario.folder.dataDir)).map((event) => event.type)).toContain('SessionStarted');
  });
});
