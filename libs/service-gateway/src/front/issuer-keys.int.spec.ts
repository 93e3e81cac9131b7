import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { decodeProtectedHeader } from 'jose';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import type { OAuthConfig } from '@oncegate/host-config';
import { approvalTools, ManualClock } from '@oncegate/host-decisions/testing';
import { ProcessMetrics } from '@oncegate/host-operations';
import { ApproverDirectory } from '@oncegate/host-principals';
/* eslint-disable-next-line @nx/enforce-module-boundaries -- the real OpenID Provider the end-to-end suite uses */
import { startIdentityProvider, type IdentityProvider, type TestClient } from '../../../../test/support/identity-provider';
import { ApprovalsApi } from './approvals-api';
import { REREAD_INTERVAL_MS } from './issuer-keys';
import { apiFront } from './api-front-fixture';
import type { McpHttpFront } from './mcp-http-front';
import { OAuthResource } from './oauth-resource';

const RESOURCE = 'https://gateway.example.com/mcp';
const BUILD_BOT: TestClient = { clientId: 'build-bot', clientSecret: 'build-bot-secret-0123456789abcdef' };
const ALICE: TestClient = { clientId: 'alice', clientSecret: 'alice-secret-0123456789abcdef', claims: { roles: ['oncegate-approver'] } };
const MINUTE = 60_000;
/** jose's `createRemoteJWKSet` keeps a key set 10 minutes by default; the keys must serve past it while the provider is away. */
const JOSE_DEFAULT_CACHE_MS = 10 * MINUTE;

/**
 * When the issuer's key set is read, and what a token gets meanwhile, against a real OpenID Provider (oidc-provider)
 * that rotates and drops keys, stops, or fails its key-set URL. Requests go to the approvals API of a real front (its
 * status and headers are what clients see); the key set's age runs on a manual clock, so nothing here waits longer
 * than the one-second re-read interval under test.
 */
describe("the issuer's key set: rotation, forged key ids and outages (oidc-provider, the approvals API of a real front)", () => {
  let idp: IdentityProvider;
  let dir: string;
  let store: EventStore;
  let front: McpHttpFront | undefined;
  let base: string;
  let clock: ManualClock;
  let metrics: ProcessMetrics;
  let oauth: OAuthResource;
  let logged: MockInstance[];

  beforeEach(async () => {
    idp = await startIdentityProvider([BUILD_BOT, ALICE]);
    dir = mkdtempSync(join(tmpdir(), 'oncegate-issuer-keys-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    clock = new ManualClock(new Date().toISOString());
    metrics = new ProcessMetrics();
    // The gateway's log lines, kept to look for the token in them and quiet in the test's output.
    logged = (['log', 'warn', 'error'] as const).map((level) => vi.spyOn(Logger.prototype, level).mockImplementation(() => undefined));
  });

  afterEach(async () => {
    await front?.close();
    front = undefined;
    await store.close();
    await idp.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    vi.restoreAllMocks();
  });

  async function startFront(overrides: Partial<OAuthConfig> = {}, clockOfKeys: { now(): Date } = clock): Promise<void> {
    const config: OAuthConfig = {
      issuer: idp.issuer,
      resource: RESOURCE,
      jwksUri: null,
      agentClaim: 'client_id',
      scopes: ['mcp'],
      approver: { claim: 'roles', value: 'oncegate-approver', nameClaim: 'client_id' },
      keysMaxAgeMs: 10 * MINUTE,
      keysStaleIfErrorMs: 60 * MINUTE,
      ...overrides,
    };
    oauth = new OAuthResource(config, { clock: clockOfKeys, metrics });
    const approvers = new ApproverDirectory(store);
    const tools = approvalTools('https://payments.example');
    front = apiFront({ store, tools, clock, mounted: [new ApprovalsApi({ store, approvers, tools, clock, oauth })], oauth });
    base = new URL((await front.listen()).url).origin;
  }

  const approvals = (token: string) => fetch(`${base}/approvals`, { headers: { authorization: `Bearer ${token}` } });
  const tokenOfAlice = () => idp.token(ALICE, RESOURCE);
  const count = async (name: string, labels: Record<string, string>) =>
    (await metrics.registry.getSingleMetric(name)!.get()).values.find((value) => Object.entries(labels).every(([key, label]) => value.labels[key] === label))?.value ?? 0;
  const logLines = () => logged.flatMap((spy) => spy.mock.calls.map((call) => String(call[0])));

  async function expectUnavailable(token: string): Promise<void> {
    const answer = await approvals(token);
    expect(answer.status, await answer.clone().text()).toBe(503);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    const body = await answer.text();
    expect(body).toMatch(/identity provider's keys could not be read/);
    expect(body).not.toContain(idp.issuer);
  }

  it('given the provider rotates its signing key right after the gateway read its key set, when the first token signed with the new key comes, then it is accepted', async () => {
    await startFront();
    expect((await approvals(await tokenOfAlice())).status).toBe(200);
    expect(idp.keySetReads).toBe(1);

    const kid = await idp.rotateKey();
    const rotated = await tokenOfAlice();
    expect(decodeProtectedHeader(rotated).kid).toBe(kid);
    // jose's createRemoteJWKSet at its defaults refused this one for 30 s (its cooldown), as invalid_token.
    const first = await approvals(rotated);
    expect(first.status, await first.clone().text()).toBe(200);
    expect(idp.keySetReads).toBe(2);
    expect(await count('oncegate_oauth_unknown_key_tokens_total', { result: 'found' })).toBe(1);
    expect(await count('oncegate_oauth_key_set_reads_total', { reason: 'unknown_key', result: 'read' })).toBe(1);
    expect(logLines()).toContainEqual(expect.stringContaining(`new: ${kid}`));
    // Tokens of the key before it still verify: the provider still publishes it.
    expect((await approvals(await idp.token(ALICE, RESOURCE))).status).toBe(200);
  });

  it('given 1,000 tokens naming made-up keys in a few seconds, then the key set is read about once a second, each is refused, and a rotation in the middle is accepted on its first token', async () => {
    await startFront({}, { now: () => new Date() });
    const genuine = await tokenOfAlice();
    expect((await approvals(genuine)).status).toBe(200);
    const readsBefore = idp.keySetReads;
    const started = performance.now();

    let flooding = true;
    const flood = (async () => {
      const answers: Array<Promise<{ status: number; body: string }>> = [];
      for (let wave = 0; wave < 20; wave++) {
        for (let i = 0; i < 50; i++) {
          answers.push(oauth.agentOf(`Bearer ${madeUpKey(genuine, `made-up-${wave}-${i}`)}`).then((verified) => ('refused' in verified ? { status: verified.refused.status, body: verified.refused.description } : { status: 200, body: '' })));
        }
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      const settled = await Promise.all(answers);
      flooding = false;
      return settled;
    })();

    // The provider rotates while the flood goes on; the first token signed with its new key is accepted.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await idp.rotateKey();
    const rotated = await idp.token(BUILD_BOT, RESOURCE);
    expect(await oauth.agentOf(`Bearer ${rotated}`)).toEqual({ actor: 'agent:build-bot' });
    expect(flooding, 'the rotated token waited for the flood').toBe(true);

    const refused = await flood;
    const seconds = (performance.now() - started) / 1000;
    expect(refused.filter((answer) => answer.status === 401 && /signature is not the issuer's/.test(answer.body))).toHaveLength(1_000);
    const reads = idp.keySetReads - readsBefore;
    // One read per re-read interval at most, and one the rotation may have needed on its own.
    expect(reads).toBeLessThanOrEqual(Math.ceil((seconds * 1000) / REREAD_INTERVAL_MS) + 1);
    expect(reads).toBeLessThanOrEqual(8);
    expect(await count('oncegate_oauth_unknown_key_tokens_total', { result: 'refused' })).toBe(1_000);
    expect(await count('oncegate_oauth_key_set_reads_total', { reason: 'unknown_key', result: 'read' })).toBe(reads);
    // An operator is told of the flood in a few lines, without a token or the made-up key ids.
    const warnings = logLines().filter((line) => /signed with a key the issuer does not publish/.test(line));
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(2);
    expect(logLines().join('\n')).not.toMatch(/made-up|eyJ/);
  });

  it('given the provider drops a key, then its tokens are accepted while the key set is younger than keys_max_age and refused once it is older', async () => {
    await startFront({ keysMaxAgeMs: 5 * MINUTE });
    const old = await tokenOfAlice();
    expect((await approvals(old)).status).toBe(200);
    await idp.rotateKey({ dropOld: true });

    clock.advance(5 * MINUTE - 1);
    expect((await approvals(old)).status).toBe(200);
    expect(idp.keySetReads).toBe(1);

    clock.advance(1);
    const refused = await approvals(old);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/invalid_token/);
    expect(await refused.text()).toMatch(/signature is not the issuer's/);
    // Judged on the set read for it: no second read for the dropped key.
    expect(idp.keySetReads).toBe(2);
    expect(await count('oncegate_oauth_key_set_reads_total', { reason: 'expired', result: 'read' })).toBe(1);
    expect((await approvals(await tokenOfAlice())).status).toBe(200);
    expect(idp.keySetReads).toBe(2);
  });

  describe.each([
    ['the provider stopped, its key set found through its metadata', 'discovered', 'stopped'],
    ['the provider stopped, oauth.jwks_uri set', 'jwks_uri', 'stopped'],
    ["the provider's key-set URL answering 503", 'discovered', 'failing'],
    ["the provider's key-set URL answering 503, oauth.jwks_uri set", 'jwks_uri', 'failing'],
  ] as const)('given %s', (_what, keysFrom, outage) => {
    const away = async () => (outage === 'stopped' ? idp.stop() : idp.failKeySet(true));
    const back = async () => (outage === 'stopped' ? idp.start() : idp.failKeySet(false));

    it('then a token is answered 503 with retry-after before the keys were read, in general words, with a log line for the operator', async () => {
      await startFront({ jwksUri: keysFrom === 'jwks_uri' ? idp.jwksUri : null });
      const token = await tokenOfAlice();
      await away();
      await expectUnavailable(token);
      expect(logLines()).toContainEqual(expect.stringMatching(new RegExp(`key set could not be read \\(first\\): .*${idp.issuer.replaceAll('.', '\\.')}`)));
      // Reads that failed are paced like the others: twenty tokens in the same second make no second attempt.
      for (let i = 0; i < 20; i++) await expectUnavailable(token);
      expect(await count('oncegate_oauth_key_set_reads_total', { reason: 'first', result: 'failed' })).toBe(1);

      await back();
      clock.advance(REREAD_INTERVAL_MS);
      expect((await approvals(token)).status).toBe(200);
      expect(logLines().join('\n')).not.toContain(token.slice(0, 40));
    });

    it("then with the keys read earlier a token is accepted past jose's 10-minute default, for keys_stale_if_error past keys_max_age; a token of a key not held is 503, never 401", async () => {
      await startFront({ jwksUri: keysFrom === 'jwks_uri' ? idp.jwksUri : null, keysMaxAgeMs: 10 * MINUTE, keysStaleIfErrorMs: 60 * MINUTE });
      const token = await tokenOfAlice();
      expect((await approvals(token)).status).toBe(200);
      await away();

      clock.advance(JOSE_DEFAULT_CACHE_MS + MINUTE);
      const stale = await approvals(token);
      expect(stale.status, await stale.clone().text()).toBe(200);
      expect(await count('oncegate_oauth_key_set_reads_total', { reason: 'expired', result: 'failed' })).toBe(1);
      expect(logLines()).toContainEqual(expect.stringMatching(/key set could not be read \(expired\): .*serve until .*keys_stale_if_error/));
      // While away, the keys read last serve without each token waiting on the provider.
      clock.advance(REREAD_INTERVAL_MS);
      expect((await approvals(token)).status).toBe(200);

      // A key the set does not hold may be the provider's newest: the set cannot be read to say, so 503.
      clock.advance(REREAD_INTERVAL_MS);
      await expectUnavailable(madeUpKey(token, 'rotated-while-away'));
      expect(await count('oncegate_oauth_unknown_key_tokens_total', { result: 'unavailable' })).toBe(1);

      const failedLines = () => logLines().filter((line) => /key set could not be read/.test(line));
      // Failed reads are logged once a minute at most, not once a second through an outage of hours.
      expect(failedLines()).toHaveLength(1);

      clock.advance(60 * MINUTE);
      await expectUnavailable(token);
      expect(failedLines()).toHaveLength(2);
      expect(failedLines()[1]).toMatch(/\(\d+ failed reads since .*\); access tokens are answered 503/);

      await back();
      clock.advance(REREAD_INTERVAL_MS);
      expect((await approvals(token)).status).toBe(200);
      expect(logLines()).toContainEqual(expect.stringMatching(/key set was read again, after \d+ failed read\(s\)/));
      expect(logLines().join('\n')).not.toContain(token.slice(0, 40));
    });
  });
});

/**
 * `token` with a header naming `kid` and a signature of random bytes: what anyone can make. The gateway never gets to
 * the signature, as the issuer publishes no such key.
 */
function madeUpKey(token: string, kid: string): string {
  const [, payload] = token.split('.');
  const header = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'at+jwt', kid })).toString('base64url');
  return `${header}.${payload}.${randomBytes(256).toString('base64url')}`;
}
