import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDemoTarget, type DemoTarget } from './demo-target';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('the ticket desk at /mcp of the demo target (official MCP clients)', () => {
  let target: DemoTarget;
  let client: Client;

  beforeAll(async () => {
    target = await startDemoTarget({ port: 0 });
  });
  afterEach(async () => {
    await client?.close();
    target.reset();
  });
  afterAll(() => target.close());

  async function connect(token?: string): Promise<Client> {
    client = new Client({ name: 'desk-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${target.url}/mcp`), token === undefined ? {} : { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client;
  }

  it('given the v2 client, then it speaks 2026-07-28 and lists a read, an idempotent write and a destructive call', async () => {
    await connect();
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => [tool.name, tool.annotations])).toEqual([
      ['list_tickets', { readOnlyHint: true }],
      ['set_ticket_priority', { destructiveHint: false, idempotentHint: true }],
      ['close_ticket', { destructiveHint: true }],
    ]);
  });

  it('given calls, then a read has no effect, a priority set twice has one, and every close is one (a notice each time)', async () => {
    await connect('desk-operator-token');
    const text = (result: unknown) => ((result as { content: Array<{ text: string }> }).content[0]!.text);
    expect(text(await client.callTool({ name: 'list_tickets', arguments: { status: 'open' } }))).toContain('T-2 [open, high] VPN drops every 20 minutes');
    expect(text(await client.callTool({ name: 'set_ticket_priority', arguments: { ticket_id: 'T-1', priority: 'urgent' } }))).toBe('T-1 is urgent');
    expect(text(await client.callTool({ name: 'set_ticket_priority', arguments: { ticket_id: 'T-1', priority: 'urgent' } }))).toBe('T-1 is urgent (it was already)');
    expect(text(await client.callTool({ name: 'close_ticket', arguments: { ticket_id: 'T-3', resolution: 'Laptop handed over.' } }))).toBe('T-3 closed; notice sent to its reporter');
    expect(text(await client.callTool({ name: 'close_ticket', arguments: { ticket_id: 'T-3', resolution: 'Laptop handed over.' } }))).toBe(
      'T-3 closed; notice sent to its reporter (again: it was closed already)',
    );
    expect(await client.callTool({ name: 'close_ticket', arguments: { ticket_id: 'T-9', resolution: 'x' } })).toMatchObject({ isError: true });

    const effects = target.effects();
    expect(effects.byEndpoint).toMatchObject({ 'MCP set_ticket_priority': 1, 'MCP close_ticket': 2 });
    expect(effects.total).toBe(3);
    expect(effects.requests.map((call) => [call.endpoint, call.effect])).toEqual([
      ['MCP list_tickets', false],
      ['MCP set_ticket_priority', true],
      ['MCP set_ticket_priority', false],
      ['MCP close_ticket', true],
      ['MCP close_ticket', true],
      ['MCP close_ticket', false],
    ]);
    // Which credential came, without the log holding it.
    expect(new Set(effects.requests.map((call) => call.authorizationSha256))).toEqual(new Set([createHash('sha256').update('Bearer desk-operator-token').digest('hex')]));
    expect(target.tickets().find((ticket) => ticket.id === 'T-3')).toMatchObject({ status: 'closed', resolution: 'Laptop handed over.' });

    target.reset();
    expect(target.effects().total).toBe(0);
    expect(target.tickets().every((ticket) => ticket.status === 'open')).toBe(true);
  });

  it('given the v1 client, then it is served on 2025-11-25', async () => {
    const legacy = new LegacyClient({ name: 'desk-test-v1', version: '1.0.0' });
    await legacy.connect(new LegacyTransport(new URL(`${target.url}/mcp`)));
    try {
      expect(legacy.getServerVersion()).toMatchObject({ name: 'oncegate-demo-desk' });
      expect((await legacy.listTools()).tools).toHaveLength(3);
    } finally {
      await legacy.close();
    }
  });

  it('given the desk, then examples/upstream-desk.yaml is what oncegate upstream add writes from it (apart from its date and port)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-desk-'));
    try {
      const out = join(dir, 'upstream-desk.yaml');
      // The CLI as its own process, and this one free to serve it: the desk runs here.
      const added = await promisify(execFile)(process.execPath, [join(ROOT, 'bin/oncegate.mjs'), 'upstream', 'add', 'desk', '--url', `${target.url}/mcp`, '--out', out], { cwd: dir });
      expect(added.stderr).toBe('');
      const normal = (text: string) =>
        text
          .replace(/^# yaml-language-server: \$schema=\S*schemas\/tools\.schema\.json\n/, '')
          .replace(/ on \d{4}-\d\d-\d\dT[\d:.]+Z /, ' on <date> ')
          .replaceAll(target.url, 'http://127.0.0.1:8790');
      expect(normal(readFileSync(join(ROOT, 'examples/upstream-desk.yaml'), 'utf8'))).toBe(normal(readFileSync(out, 'utf8')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
