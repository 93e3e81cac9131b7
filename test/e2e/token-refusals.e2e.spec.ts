import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prefixesOf } from '../support/canaries';
import { gatewayFolder, oncegate, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { parseExposition, type ParsedSample } from '../support/prometheus';

const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'refused', version: '1' } } });

/**
 * Requests refused for their token leave a trace an operator can see: a count by surface and reason at /metrics (read
 * with the Prometheus project's own parser), and a log line naming the reason and the principal of a revoked token —
 * at most one a minute for the same refusal, and never the token or any prefix of it.
 */
describe('refused tokens: counted by reason, logged without the token', () => {
  let folder: GatewayFolder;
  let gateway: GatewayProcess;
  let operations: string;
  let revokedAgent: string;
  let approverToken: string;

  const post = (path: string, authorization?: string) =>
    fetch(new URL(path, gateway.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization === undefined ? {} : { authorization }) },
      body: INITIALIZE,
    });
  const refusals = async (): Promise<ParsedSample[]> => {
    const response = await fetch(new URL('/metrics', operations));
    return (await parseExposition(await response.text())).filter((sample) => sample.family === 'oncegate_token_refusals_total');
  };
  const count = (samples: readonly ParsedSample[], surface: string, reason: string) =>
    samples.find((sample) => sample.labels['surface'] === surface && sample.labels['reason'] === reason)?.value ?? 0;

  beforeAll(async () => {
    folder = await gatewayFolder('http://127.0.0.1:9');
    appendFileSync(folder.configFile, 'operations: { host: 127.0.0.1, port: 0 }\n');
    revokedAgent = (await oncegate(folder, ['agents', 'add', 'retired-bot'])).stdout.trim();
    approverToken = (await oncegate(folder, ['approvers', 'add', 'alice'])).stdout.trim();
    expect(revokedAgent).toMatch(/^ogt_/);
    expect(approverToken).toMatch(/^oga_/);
    expect((await oncegate(folder, ['agents', 'revoke', 'retired-bot'])).code).toBe(0);
    gateway = await startGatewayProcess(folder);
    operations = /operations:\s+(\S+)/.exec(gateway.output())![1]!;
    // The parser is built once (Go, modules from the module proxy) before a test waits on it.
    await parseExposition('');
  }, 180_000);

  afterAll(async () => {
    await gateway?.stop();
    folder?.dispose();
  });

  it('given requests with no token, not a token, an approver\'s token and a revoked token, then each is refused with 401 and counted by its reason', { timeout: 60_000 }, async () => {
    const before = await refusals();
    const answers = [
      await post('/mcp'),
      await post('/mcp', 'Bearer not-a-token-at-all'),
      await post('/mcp', `Bearer ${approverToken}`),
      ...(await Promise.all(Array.from({ length: 5 }, () => post('/mcp', `Bearer ${revokedAgent}`)))),
      await post('/approvals/ex_00000000000000000000000000/approve'),
    ];
    for (const answer of answers) expect(answer.status).toBe(401);
    const after = await refusals();
    const added = (surface: string, reason: string) => count(after, surface, reason) - count(before, surface, reason);
    expect(added('mcp', 'missing')).toBe(1);
    expect(added('mcp', 'malformed')).toBe(1);
    expect(added('mcp', 'wrong_kind')).toBe(1);
    expect(added('mcp', 'revoked')).toBe(5);
    expect(added('approvals', 'missing')).toBe(1);
  });

  it('given those refusals, then the log names each reason and the revoked token\'s agent once, and no token nor any prefix of one', () => {
    const lines = gateway.output().split('\n').filter((line) => line.includes('refused a request on'));
    expect(lines.filter((line) => line.includes('a revoked token (agent:retired-bot)'))).toHaveLength(1);
    expect(lines.some((line) => line.includes('refused a request on mcp: no token'))).toBe(true);
    expect(lines.some((line) => line.includes('refused a request on mcp: a token of another kind'))).toBe(true);
    expect(lines.some((line) => line.includes('refused a request on approvals: no token'))).toBe(true);
    const output = gateway.output();
    for (const token of [revokedAgent, approverToken]) {
      // The kind's prefix (`ogt_`, `oga_`) and one character are no secret; every longer prefix is.
      for (const prefix of prefixesOf(token).filter((text) => text.length > 6)) expect(output).not.toContain(prefix);
    }
    expect(output).not.toContain('not-a-token-at-all');
  });
});
