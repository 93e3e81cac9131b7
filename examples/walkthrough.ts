/**
 * Watch a dropped connection being recovered without a second side effect.
 *
 *   npm start                                   # in one terminal
 *   node --import tsx examples/walkthrough.ts   # in another
 *
 * It talks to the gateway with the official MCP client and the development token, to the demo target's
 * control surface, exactly as printed by `npm start`, and approves the payment with `oncegate approvals` as an
 * operator would. Options: ONCEGATE_URL, ONCEGATE_TOKEN, DEMO_TARGET_URL (and ONCEGATE_DATA_DIR for the CLI).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const gatewayUrl = process.env['ONCEGATE_URL'] ?? 'http://127.0.0.1:8787/mcp';
const targetUrl = process.env['DEMO_TARGET_URL'] ?? 'http://127.0.0.1:8790';
const token = process.env['ONCEGATE_TOKEN'] ?? readFileSync('.oncegate/dev-token', 'utf8').trim();
const say = (line: string) => process.stdout.write(`${line}\n`);
/** `oncegate <args>` on the configuration `npm start` uses. */
const oncegate = async (...args: string[]) =>
  (await promisify(execFile)(process.execPath, ['bin/oncegate.mjs', ...args, '--config', 'examples/oncegate.yaml'], { encoding: 'utf8' })).stdout;

async function control(action: string, body: object = {}) {
  await fetch(`${targetUrl}/_control/${action}`, { method: 'POST', body: JSON.stringify(body) });
}
async function paymentsSeen(): Promise<number> {
  const effects = (await (await fetch(`${targetUrl}/effects`)).json()) as { byEndpoint: Record<string, number> };
  return effects.byEndpoint['POST /payments'] ?? 0;
}
async function connect(signalFetch?: typeof fetch) {
  const transport = new StreamableHTTPClientTransport(new URL(gatewayUrl), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    reconnectionOptions: { initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1, maxRetries: 0 },
    ...(signalFetch ? { fetch: signalFetch } : {}),
  });
  const client = new Client({ name: 'walkthrough', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const payment = {
  payment_reference: `walkthrough-${Date.now()}`,
  amount_cents: 4200,
  currency: 'EUR',
  card_token: 'tok_walkthrough_demo',
};
const before = await paymentsSeen();

say('1. The demo target will take the payment but hold its answer.');
await control('hold', { match: 'POST /payments' });

say('2. The agent calls send_payment. Payments need a person\'s approval (approval: per_use), so the call waits.');
const cut = new AbortController();
const dropping: typeof fetch = (input, init) =>
  fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal });
const first = await connect(dropping);
const lost = first.callTool({ name: 'send_payment', arguments: payment }).catch((error: unknown) => error);
let pending: { executionId: string } | undefined;
const giveUpAt = Date.now() + 30_000;
while (pending === undefined) {
  if (Date.now() > giveUpAt) {
    say(`   no approval request appeared in 30 s; the call answered: ${JSON.stringify(await lost)}`);
    process.exit(1);
  }
  const approvals = JSON.parse(await oncegate('approvals', 'list', '--json')) as Array<{ executionId: string; tool: string }>;
  pending = approvals.find((approval) => approval.tool === 'send_payment');
  if (pending === undefined) await new Promise((resolve) => setTimeout(resolve, 200));
}
say(`   oncegate approvals list: ${pending.executionId} send_payment, awaiting approval; nothing sent yet`);
await oncegate('approvals', 'approve', pending.executionId, '--reason', 'walkthrough: invoice checked', '--by', 'user:walkthrough');
say('   oncegate approvals approve: the gateway sends it, once');

say('3. The network drops while the target holds the answer.');
while ((await paymentsSeen()) === before) await new Promise((resolve) => setTimeout(resolve, 50));
cut.abort();
await first.close();
await lost;
say(`   the agent saw its connection fail; payments at the target: ${(await paymentsSeen()) - before}`);

say('4. The target finishes; the gateway records the outcome for the execution.');
await control('release', { match: 'POST /payments' });
await new Promise((resolve) => setTimeout(resolve, 500));

say('5. The agent retries the same call (a new JSON-RPC id, a new connection).');
const second = await connect();
const retried = await second.callTool({ name: 'send_payment', arguments: payment });
// The agent goes on: its next request on the session is what tells the gateway the answer arrived.
await second.listTools();
await second.close();
const execution = (retried.structuredContent as { execution: { id: string; attached: boolean; state: string } }).execution;
say(`   execution ${execution.id}: attached=${execution.attached}, state=${execution.state}`);
say(`   payments at the target: ${(await paymentsSeen()) - before} (one effect, however many retries)`);
