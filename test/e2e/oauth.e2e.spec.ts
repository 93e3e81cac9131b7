import { appendFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClientCredentialsProvider } from '@modelcontextprotocol/client';
import { OncegateClient } from '@oncegate/client';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, oncegate, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { startIdentityProvider, type IdentityProvider, type TestClient } from '../support/identity-provider';
import { eventually, readJournal } from '../support/journal';
import { connectModernClient } from '../support/mcp-clients';
import { executionOf } from '../support/scenario';

const BUILD_BOT: TestClient = { clientId: 'build-bot', clientSecret: 'build-bot-secret-0123456789abcdef' };
const ALICE: TestClient = { clientId: 'alice', clientSecret: 'alice-secret-0123456789abcdef', claims: { roles: ['oncegate-approver'] } };
const MALLORY: TestClient = { clientId: 'mallory', clientSecret: 'mallory-secret-0123456789abcdef' };

/** An identity provider, the demo target and a gateway that takes the provider's tokens. */
interface OAuthWorld {
  idp: IdentityProvider;
  target: DemoTargetProcess;
  folder: GatewayFolder;
  gateway: GatewayProcess;
}

async function startWorld(world: Partial<OAuthWorld>): Promise<void> {
  world.idp = await startIdentityProvider([BUILD_BOT, ALICE, MALLORY]);
  world.target = await startDemoTargetProcess();
  world.folder = await gatewayFolder(world.target.url, { call_wait: '10s' });
  appendFileSync(
    world.folder.configFile,
    // keys_max_age: 1s, so that a test sees keys read earlier serve past their age without waiting for the default 10m.
    `oauth: { issuer: '${world.idp.issuer}', resource: '${world.folder.url}', agent_claim: client_id, scopes: [mcp], approver: { claim: roles, value: oncegate-approver, name_claim: client_id }, keys_max_age: 1s }\n`,
  );
  world.gateway = await startGatewayProcess(world.folder);
}

async function stopWorld(world: Partial<OAuthWorld>): Promise<void> {
  await world.gateway?.stop();
  await world.target?.stop();
  await world.idp?.stop();
  world.folder?.dispose();
}

// The refusals change nothing, in the gateway or at the provider: they share one world (a provider, a target and a
// gateway cost seconds to start), and each checks that nothing at all was accepted.
describe('OAuth 2.1: requests the gateway refuses, against a real OpenID Provider (oidc-provider)', () => {
  const world = {} as OAuthWorld;
  beforeAll(() => startWorld(world));
  afterAll(() => stopWorld(world));

  it('given a request without a token, then the 401 challenge names the protected resource metadata, which names the issuer', async () => {
    const { folder, idp } = world;
    const refused = await fetch(folder.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(refused.status).toBe(401);
    const challenge = refused.headers.get('www-authenticate') ?? '';
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    expect(metadataUrl).toBe(`http://127.0.0.1:${folder.port}/.well-known/oauth-protected-resource/mcp`);
    const metadata = (await (await fetch(metadataUrl!)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({ resource: folder.url, authorization_servers: [idp.issuer], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] });
  });

  it.each([
    ['for another resource (aud)', async () => world.idp.token(BUILD_BOT, 'https://other.example.com/mcp'), /another resource/],
    ['signed by someone else', async () => forged(await world.idp.token(BUILD_BOT, world.folder.url)), /signature/],
    ['signed with a key the issuer does not publish', async () => forged(await world.idp.token(BUILD_BOT, world.folder.url), 'key-nobody-published'), /signature/],
    [
      'from another issuer',
      async () => {
        const other = await startIdentityProvider([BUILD_BOT]);
        try {
          return await other.token(BUILD_BOT, world.folder.url);
        } finally {
          await other.stop();
        }
      },
      /another issuer|signature/,
    ],
    ['unsigned (alg: none)', async () => unsigned(await world.idp.token(BUILD_BOT, world.folder.url)), /unknown or revoked token/],
    ['without the required scope', async () => world.idp.token(BUILD_BOT, world.folder.url, 'audit'), /scope/i],
    [
      'that has expired',
      async () => {
        const token = await world.idp.token(BUILD_BOT, world.folder.url, 'mcp', 1);
        await new Promise((resolve) => setTimeout(resolve, 2_100));
        return token;
      },
      /expired/,
    ],
  ])('given an access token %s, then it is refused with a challenge and nothing is accepted', async (_what, tokenOf, reason) => {
    const { folder, gateway } = world;
    const token = await tokenOf();
    const refused = await fetch(folder.url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect([401, 403], await refused.clone().text()).toContain(refused.status);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer .*resource_metadata=/);
    const body = await refused.text();
    expect(body).toMatch(reason);
    // The token is never repeated, in the answer or the log.
    expect(body).not.toContain(token.slice(0, 40));
    expect(gateway.output()).not.toContain(token.slice(0, 40));
    expect((await readJournal(folder.dataDir)).filter((event) => event.type === 'ExecutionAccepted')).toEqual([]);
  });
});

describe('OAuth 2.1: the gateway as a resource server for a real OpenID Provider (oidc-provider)', () => {
  let idp: IdentityProvider;
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let gateway: GatewayProcess;
  const world = {} as OAuthWorld;

  // Each of these calls, stops the provider or rotates its key: a world of its own.
  beforeEach(async () => {
    await startWorld(world);
    ({ idp, target, folder, gateway } = world);
  });
  afterEach(() => stopWorld(world));

  it('given the official v2 client with client credentials, then it follows the challenge to the provider, gets a token for this gateway and calls as agent:<client_id>', async () => {
    const client = await OncegateClient.connect({
      url: folder.url,
      authProvider: new ClientCredentialsProvider({ clientId: BUILD_BOT.clientId, clientSecret: BUILD_BOT.clientSecret, expectedIssuer: idp.issuer, scope: 'mcp' }),
    });
    const answer = await client.callTool('set_config', { name: 'oauth.one', value: 'v' });
    await client.close();
    expect(['completed', 'delivered']).toContain(executionOf(answer).state);
    const accepted = (await readJournal(folder.dataDir)).find((event) => event.type === 'ExecutionAccepted')!;
    expect(accepted.metadata['actor']).toBe('agent:build-bot');
    expect((await target.effects()).requestsTotal).toBe(1);
  });

  it('given the identity provider out of reach before its keys were read, then a token is answered 503, told in general terms, and nothing is accepted', async () => {
    const token = await idp.token(BUILD_BOT, folder.url);
    await idp.stop();
    const refused = await fetch(folder.url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    const body = await refused.text();
    expect(body).toMatch(/identity provider's keys could not be read/);
    expect(body).not.toContain(idp.issuer);
    const approvals = await fetch(`http://127.0.0.1:${folder.port}/approvals`, { headers: { authorization: `Bearer ${token}` } });
    expect(approvals.status).toBe(503);
    // The details are the operator's: in the log.
    await eventually(async () => (gateway.output().includes(idp.issuer) ? true : undefined));
    expect((await readJournal(folder.dataDir)).filter((event) => event.type === 'ExecutionAccepted')).toEqual([]);
  });

  it("given the provider rotates its signing key right after the gateway read its key set, then the first call with a token of the new key is accepted", async () => {
    const before = await connectModernClient(folder.url, await idp.token(BUILD_BOT, folder.url));
    await before.listTools();
    await before.close();
    const kid = await idp.rotateKey();
    const rotated = await idp.token(BUILD_BOT, folder.url);
    expect(decodeProtectedHeader(rotated).kid).toBe(kid);
    const client = await connectModernClient(folder.url, rotated);
    const answer = await client.callTool({ name: 'set_config', arguments: { name: 'oauth.rotated', value: 'v' } });
    await client.close();
    expect(['completed', 'delivered']).toContain(executionOf(answer).state);
    await eventually(async () => (gateway.output().includes(`new: ${kid}`) ? true : undefined));
  });

  it('given keys read and then the provider stopped, then its tokens are accepted past keys_max_age, and a token of a key the gateway does not hold gets 503 with retry-after, not 401', async () => {
    const token = await idp.token(BUILD_BOT, folder.url);
    const client = await connectModernClient(folder.url, token);
    await client.listTools();
    await client.close();
    await idp.stop();
    // Past keys_max_age (1s here): the keys read earlier serve while the provider is away.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const again = await connectModernClient(folder.url, token);
    const answer = await again.callTool({ name: 'set_config', arguments: { name: 'oauth.away', value: 'v' } });
    await again.close();
    expect(['completed', 'delivered']).toContain(executionOf(answer).state);
    const unknown = await fetch(folder.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${await forged(token, 'rotated-while-away')}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(unknown.status, await unknown.clone().text()).toBe(503);
    expect(unknown.headers.get('retry-after')).toMatch(/^\d+$/);
    await eventually(async () => (/key set could not be read/.test(gateway.output()) ? true : undefined));
    expect(gateway.output()).not.toContain(token.slice(0, 40));
  });

  it('given an approver claim in the token, then the approvals API takes it as approver:<name>; a token without it is forbidden', async () => {
    const client = await connectModernClient(folder.url, await idp.token(BUILD_BOT, folder.url));
    const waiting = client.callTool({ name: 'send_payout', arguments: { payment_reference: 'payout-oauth-0001', amount_cents: 500 } }, { timeout: 30_000 });
    const executionId = await eventually(async () => (await readJournal(folder.dataDir)).find((event) => event.type === 'ApprovalRequested')?.metadata['executionId'] as string | undefined);
    const base = `http://127.0.0.1:${folder.port}/approvals/${executionId}/approve`;
    const decide = (token: string) =>
      fetch(base, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ reason: 'checked the supplier' }) });
    const forbidden = await decide(await idp.token(MALLORY, folder.url));
    expect(forbidden.status).toBe(403);
    expect(await forbidden.text()).toMatch(/not an approver/);
    const approved = await decide(await idp.token(ALICE, folder.url));
    expect(approved.status, await approved.clone().text()).toBe(200);
    const answer = await waiting;
    await client.close();
    expect(['completed', 'delivered']).toContain(executionOf(answer).state);
    const granted = (await readJournal(folder.dataDir)).find((event) => event.type === 'ApprovalGranted')!;
    expect(granted.data).toMatchObject({ by: 'approver:alice' });
    // Static agent tokens still work beside the provider's.
    const listed = await oncegate(folder, ['approvals', 'list', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
  });
});

/** The same claims under another key's signature (named `kid`, by default the issuer's): what an attacker without the issuer's key can make. */
async function forged(token: string, kid?: string): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256');
  const header = decodeProtectedHeader(token);
  return new SignJWT(decodeJwt(token)).setProtectedHeader({ alg: 'RS256', kid: kid ?? header.kid!, typ: header.typ! }).sign(privateKey);
}

/** The same claims with `alg: none` and no signature. */
function unsigned(token: string): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${encode({ alg: 'none', typ: 'at+jwt' })}.${encode(decodeJwt(token))}.`;
}
