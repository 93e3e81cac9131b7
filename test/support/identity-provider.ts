import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
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
  /** An access token for `clientId` by the client credentials grant, for `resource` (RFC 8707) and `scope`, valid `ttlSeconds`. */
  token(client: TestClient, resource: string, scope?: string, ttlSeconds?: number): Promise<string>;
  stop(): Promise<void>;
}

/**
 * A real OpenID Provider (`oidc-provider`, certified) on 127.0.0.1 for the tests: client credentials grant,
 * resource indicators, JWT access tokens (RFC 9068) signed with a fresh RS256 key, audience = the resource asked for.
 */
export async function startIdentityProvider(clients: readonly TestClient[], options: { readonly accessTokenTtlSeconds?: number } = {}): Promise<IdentityProvider> {
  const http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signing = { ...(await exportJWK(privateKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' };
  let ttl = options.accessTokenTtlSeconds ?? 300;
  const claimsOf = new Map(clients.map((client) => [client.clientId, client.claims ?? {}]));
  const provider = new Provider(issuer, {
    clients: clients.map((client) => ({
      client_id: client.clientId,
      client_secret: client.clientSecret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    jwks: { keys: [signing] },
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
  http.on('request', provider.callback());
  return {
    issuer,
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
    async stop() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
