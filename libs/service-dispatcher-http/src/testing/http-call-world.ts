import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpDispatcher } from '@oncegate/channel-http';
import type { ToolContract } from '@oncegate/contracts';
import { executionIdFromUlid, type ExecutionId } from '@oncegate/domain';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { isoNow, newUlid, runExecutionCommand, systemClock } from '@oncegate/execution-journal';
import { VaultService } from '@oncegate/host-vault';
import { SqliteSealedStore } from '@oncegate/sealed-store';
import { initVault, storeCredential, type VaultContext } from '@oncegate/vault';

/*
 * Test support for the integration tests of the HTTP path through the services (authorization, the HTTP
 * dispatcher): a real SQLite store and sealed store, a real vault holding one bearer credential bound to a
 * loopback target that records what reached it.
 */

export interface RecordedRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface HttpCallWorld {
  readonly dataDir: string;
  readonly store: SqliteEventStore;
  readonly sealed: SqliteSealedStore;
  readonly http: HttpDispatcher;
  readonly vault: VaultService;
  readonly target: { readonly url: string; readonly requests: RecordedRequest[] };
  vaultContext(): VaultContext;
  close(): Promise<void>;
}

/**
 * A loopback target that records every request; it answers `{"ok":true}`, or with `echoAuthorization` the
 * Authorization header it got (an answer that must not reach the agent as it came).
 */
async function startRecordingTarget(echoAuthorization: boolean): Promise<{ url: string; requests: RecordedRequest[]; server: Server }> {
  const requests: RecordedRequest[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (echoAuthorization) response.writeHead(200, { 'content-type': 'text/plain' }).end(`seen ${String(request.headers['authorization'])}`);
      else response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, requests, server };
}

/**
 * The world of one test: the vault (under `masterKey`) holds `demo-writer`, a bearer credential whose value is
 * `credential`, bound to the target's `/config` path.
 */
export async function openHttpCallWorld(options: {
  readonly masterKey: string;
  readonly credential: string;
  readonly echoAuthorization?: boolean;
}): Promise<HttpCallWorld> {
  const dataDir = mkdtempSync(join(tmpdir(), 'oncegate-http-call-'));
  const env = { ONCEGATE_MASTER_KEY: options.masterKey };
  const store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
  const sealed = new SqliteSealedStore({ file: join(dataDir, 'sealed.db'), current: { id: 'seal-test', key: randomBytes(32) } });
  const http = new HttpDispatcher();
  const target = await startRecordingTarget(options.echoAuthorization ?? false);
  const vaultContext = (): VaultContext => ({ store, dataDir, env, by: 'operator:test' });
  await initVault(vaultContext());
  await storeCredential(vaultContext(), { ref: 'demo-writer', kind: 'bearer', bindings: [`${new URL(target.url).host}/config`] }, options.credential);
  const vault = new VaultService({ store, dataDir, env });
  await vault.start();
  return {
    dataDir,
    store,
    sealed,
    http,
    vault,
    target,
    vaultContext,
    async close() {
      await vault.stop();
      await http.close();
      await new Promise((resolve) => target.server.close(resolve));
      await sealed.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Seals `args` and accepts one call of the HTTP `tool` by `agent:test`, as the front would; returns its id. */
export async function acceptHttpCall(world: HttpCallWorld, tool: ToolContract, args: Record<string, unknown>): Promise<ExecutionId> {
  const executionId: ExecutionId = executionIdFromUlid(newUlid());
  const argumentsRef = (await world.sealed.seal('arguments', executionId, Buffer.from(JSON.stringify(args)))).ref;
  await runExecutionCommand(
    world.store,
    executionId,
    () => ({
      type: 'AcceptExecution',
      executionId,
      now: isoNow(systemClock),
      record: {
        actor: 'agent:test',
        tool: tool.name,
        channel: 'http',
        target: tool.target,
        credential_ref: tool.credentialRef,
        method: tool.request.kind === 'http' ? tool.request.method : 'POST',
        arguments: args,
        intent_scope: 'actor',
      } as never,
      fingerprint: `hmac-sha256:k1:${randomBytes(32).toString('hex')}`,
      operationClass: tool.operationClass,
      intentScope: { kind: 'actor' } as never,
      correlationWindowMs: 60_000,
      redeliveryGraceMs: 0,
      attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: 30_000, markerBeforeWork: false },
      correlation: { jsonRpcId: 1, sessionId: null, transport: 'streamable-http' } as never,
      argumentsRef,
    }),
    { actor: 'agent:test' },
    systemClock,
  );
  return executionId;
}
