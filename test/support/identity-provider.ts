import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';

export interface TestClient {
  readonly clientId: string;
  readonly clientSecret: string;
  /** Claims added to every access token issued to this client (e.g. `roles`). */
  readonly claims?: Record<string, unknown>;
}

export interface IdentityProvider {
  /** The issuer identifier, `http://127.0.0.1:<port>`. */
  readonly issuer: string;
  /** Its key set's URL, as its metadata names it (`jwks_uri`). */
  readonly jwksUri: string;
  /** The key ids its key set publishes now; it signs with the first. */
  readonly kids: readonly string[];
  /** How many times its key set has been asked for (answered or failed). */
  readonly keySetReads: number;
  /** An access token for `clientId` by the client credentials grant, for `resource` (RFC 8707) and `scope`, valid `ttlSeconds`. */
  token(client: TestClient, resource: string, scope?: string, ttlSeconds?: number): Promise<string>;
  /**
   * A key rotation as providers do it: a new key is published first in the key set and signs every token from now on;
   * the keys before it stay published (tokens they signed still verify), unless `dropOld`. Returns the new key's id.
   */
  rotateKey(options?: { readonly dropOld?: boolean }): Promise<string>;
  /** While `true`, its key-set URL answers `503`; discovery and the token endpoint keep answering. */
  failKeySet(failing: boolean): void;
  /** Stops listening (a provider that is down); `start` listens again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * A real OpenID Provider (`oidc-provider`, certified) on 127.0.0.1 for the tests: client credentials grant,
 * resource indicators, JWT access tokens (RFC 9068) signed with a fresh RS256 key, audience = the resource asked for.
 * oidc-provider takes its keys when it is made, so a rotation makes the provider again with the new key set, on the
 * same server and issuer.
 */
export async function startIdentityProvider(clients: readonly TestClient[], options: { readonly accessTokenTtlSeconds?: number } = {}): Promise<IdentityProvider> {
  let http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  let ttl = options.accessTokenTtlSeconds ?? 300;
  let keys: JWK[] = [await signingKey(1)];
  let keySetReads = 0;
  let keySetFailing = false;
  const claimsOf = new Map(clients.map((client) => [client.clientId, client.claims ?? {}]));
  const providerWith = (jwks: JWK[]) => {
    const provider = new Provider(issuer, {
      clients: clients.map((client) => ({
        client_id: client.clientId,
        client_secret: client.clientSecret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
      })),
      jwks: { keys: jwks },
      scopes: ['mcp', 'audit'],
      ttl: { ClientCredentials: () => ttl },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => undefined as unknown as string,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, resource) => ({
            scope: 'mcp audit',
            audience: resource,
            accessTokenFormat: 'jwt',
            accessTokenTTL: ttl,
            jwt: { sign: { alg: 'RS256' } },
          }),
        },
      },
      extraTokenClaims: (_ctx, token) => claimsOf.get((token as { clientId?: string }).clientId ?? '') ?? {},
    });
    // Plain http on loopback: tell the provider the connection is what it is.
    provider.proxy = false;
    return provider.callback();
  };
  let handle = providerWith(keys);
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.split('?')[0] === '/jwks') {
      keySetReads += 1;
      if (keySetFailing) {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"temporarily_unavailable"}');
        return;
      }
    }
    void handle(req, res);
  };
  http.on('request', serve);
  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    get kids() {
      return keys.map((key) => key.kid!);
    },
    get keySetReads() {
      return keySetReads;
    },
    async token(client, resource, scope = 'mcp', ttlSeconds = options.accessTokenTtlSeconds ?? 300) {
      ttl = ttlSeconds;
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }),
      });
      const body = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!response.ok || body.access_token === undefined) throw new Error(`token: ${response.status} ${body.error}: ${body.error_description}`);
      return body.access_token;
    },
    async rotateKey({ dropOld = false } = {}) {
      const key = await signingKey(keys.length + 1);
      keys = dropOld ? [key] : [key, ...keys];
      handle = providerWith(keys);
      return key.kid!;
    },
    failKeySet(failing) {
      keySetFailing = failing;
    },
    async stop() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
    async start() {
      http = createServer(serve);
      await new Promise<void>((resolve, reject) => http.once('error', reject).listen(port, '127.0.0.1', resolve));
    },
  };
}

/** A fresh RS256 signing key, `test-key-<n>`. */
async function signingKey(n: number): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: `test-key-${n}`, alg: 'RS256', use: 'sig' };
}
