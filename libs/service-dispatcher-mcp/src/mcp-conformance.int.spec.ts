import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OperationClass } from '@oncegate/dispatcher-kit';
import { describeDispatcherConformance } from '@oncegate/dispatcher-kit/testing/vitest';
import { mcpKit } from './mcp-channel';
import { alive, mcpContract, startHttpUpstream, stdioUpstreamCommand, UpstreamFolder, type McpContractTool, type UpstreamReach } from './testing';

/** A value that must never be seen again: the bearer token of the HTTP upstream. */
const CANARY = 'mcp-canary-4b7e19c05d';
const CLASSES: readonly OperationClass[] = ['read_only', 'idempotent_write', 'irreversible'];
/** The upstream's tool behind each class's conformance tool. */
const UPSTREAM_TOOL: Partial<Record<OperationClass, string>> = { read_only: 'read_balance', idempotent_write: 'set_limit', irreversible: 'send_payment' };

function contract(reach: UpstreamReach, limits: string, credentialRef?: string, echo = false): string {
  const tools: McpContractTool[] = CLASSES.map((operationClass) => ({
    name: `conformance_${operationClass}`,
    upstreamTool: UPSTREAM_TOOL[operationClass]!,
    operationClass,
    upstream: 'ledger',
    reach,
    limits,
    ...(credentialRef === undefined ? {} : { credentialRef }),
  }));
  if (echo) tools.push({ name: 'conformance_echo', upstreamTool: 'echo_credential', operationClass: 'read_only', upstream: 'ledger', reach, limits, ...(credentialRef === undefined ? {} : { credentialRef }) });
  return mcpContract(tools);
}

/** Each call a distinct intent: another account, another amount. */
function args(operationClass: OperationClass, n: number): Record<string, unknown> {
  if (operationClass === 'read_only') return { account: `acct-${n}` };
  if (operationClass === 'idempotent_write') return { account: `acct-${n}`, cents: 100 + n };
  return { to: `acct-${n}`, cents: 500 + n };
}

describeDispatcherConformance(
  'mcp over Streamable HTTP (the official SDK server, 2026-07-28 negotiated; bearer credential)',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-mcp-http-'));
    const upstream = await startHttpUpstream({ dir, token: CANARY });
    return {
      kit: mcpKit,
      contract: contract({ url: upstream.url }, '{ connect_timeout: 2s, response_timeout: 2s }', 'ledger-token', true),
      credential: { ref: 'ledger-token', kind: 'password', bindings: [`127.0.0.1:${upstream.port}`], value: CANARY },
      echo: { args: { n: 1 } },
      target: {
        effects: async (executionId) => upstream.folder.effects(executionId),
        loseNextAnswer: () => upstream.folder.arm('lose'),
        withholdNextAnswer: () => upstream.folder.arm('withhold'),
        faultStruck: () => upstream.folder.struck(),
        unreachable: (on) => upstream.refuse(on),
      },
      args,
      async close() {
        await upstream.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  { classes: CLASSES },
);

describeDispatcherConformance(
  'mcp over stdio (a child the channel starts and supervises, the official SDK server; no credential)',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-mcp-stdio-'));
    const folder = new UpstreamFolder(dir);
    return {
      kit: mcpKit,
      // A child takes a second or two to start (tsx): the connect timeout leaves it that.
      contract: contract({ command: stdioUpstreamCommand(dir) }, '{ connect_timeout: 15s, response_timeout: 2s }'),
      target: {
        effects: async (executionId) => folder.effects(executionId),
        loseNextAnswer: () => folder.arm('lose'),
        withholdNextAnswer: () => folder.arm('withhold'),
        faultStruck: () => folder.struck(),
        async unreachable(on) {
          folder.down(on);
          if (!on) return;
          // The children running now die; each one started again exits before it answers anything.
          const pids = folder.pids();
          for (const pid of pids) process.kill(pid, 'SIGKILL');
          while (pids.some(alive)) await new Promise((resolve) => setTimeout(resolve, 20));
          // The channel hears of each death from the closed pipes before the next attempt.
          await new Promise((resolve) => setTimeout(resolve, 300));
        },
      },
      args,
      async close() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  { classes: CLASSES, noCredential: 'a stdio upstream is a child process the channel starts: its tools name no vault credential (the section check refuses one)' },
);
