import { Logger } from '@nestjs/common';
import {
  bearerAuthChallengeResponse,
  getOAuthProtectedResourceMetadataUrl,
  OAuthError,
  OAuthErrorCode,
  verifyBearerToken,
  type AuthInfo,
} from '@modelcontextprotocol/server';
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { OAuthConfig } from '@oncegate/service-host/config/gateway-config';

/** A compact JWS: three base64url parts. The gateway's own agent and approver tokens never have a dot. */
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** What `agent:<name>` and `approver:<name>` take (the principal directories' names). */
const PRINCIPAL_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
/** Signatures an access token may carry: asymmetric only, so no shared secret can mint one. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

export function looksLikeJwt(token: string): boolean {
  return JWT.test(token);
}

/** Why a token was refused, or an HTTP answer that says so: status, challenge, description. */
export interface OAuthRefusal {
  readonly status: number;
  readonly challenge: string;
  readonly description: string;
}

/**
 * The gateway as an OAuth 2.1 resource server (MCP authorization; RFC 9728, RFC 8707): it publishes its protected
 * resource metadata, takes access tokens that the configured issuer signed (keys from its JWKS) for this gateway's
 * resource URL (`aud`), unexpired, with the configured scopes, and names their principal by a claim:
 * `agent:<agent_claim>` on the MCP endpoint, `approver:<name_claim>` on the approvals API and console when the
 * token holds the approver claim. A refusal carries the `WWW-Authenticate` challenge that MCP clients follow to
 * the authorization server. The token itself is never logged or repeated.
 */
export class OAuthResource {
  private readonly log = new Logger('oauth');
  private keys: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
  /** Where the metadata document is, as the challenge names it. */
  readonly metadataUrl: string;
  /** The paths the document is served at: the RFC 9728 one for the resource, and the origin's root one. */
  readonly metadataPaths: readonly string[];

  constructor(
    private readonly config: OAuthConfig,
    private readonly fetchJson: (url: string) => Promise<unknown> = async (url) => {
      const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
      if (!response.ok) throw new Error(`${url} answered ${response.status}`);
      return response.json();
    },
  ) {
    this.metadataUrl = getOAuthProtectedResourceMetadataUrl(new URL(config.resource));
    this.metadataPaths = [...new Set([new URL(this.metadataUrl).pathname, '/.well-known/oauth-protected-resource'])];
  }

  /** The RFC 9728 protected resource metadata. */
  metadata(): Record<string, unknown> {
    return {
      resource: this.config.resource,
      authorization_servers: [this.config.issuer],
      bearer_methods_supported: ['header'],
      ...(this.config.scopes.length > 0 ? { scopes_supported: this.config.scopes } : {}),
      resource_name: 'Oncegate',
    };
  }

  /** The challenge of a request that came without a token: where to find the authorization server. */
  challengeWithoutToken(): string {
    return `Bearer resource_metadata="${this.metadataUrl}"${this.config.scopes.length > 0 ? `, scope="${this.config.scopes.join(' ')}"` : ''}`;
  }

  /** The agent of an MCP request's access token (`Authorization` header), or the refusal. */
  async agentOf(authorization: string): Promise<{ actor: string } | { refused: OAuthRefusal }> {
    return this.principalOf(authorization, this.config.scopes, (claims) => {
      const name = nameIn(claims, this.config.agentClaim);
      if (name === undefined) throw new OAuthError(OAuthErrorCode.InvalidToken, `the token's ${this.config.agentClaim} claim does not name an agent (1 to 64 of a-z, 0-9, '.', '_', '-')`);
      return `agent:${name}`;
    });
  }

  /** The approver of an approvals API or console request's access token, or the refusal. */
  async approverOf(authorization: string): Promise<{ actor: string } | { refused: OAuthRefusal }> {
    return this.principalOf(authorization, [], (claims) => {
      const approver = this.config.approver;
      if (approver === null) throw new OAuthError(OAuthErrorCode.InsufficientScope, 'this gateway takes no access tokens for approvers (oauth.approver is not set)');
      const held = claims[approver.claim];
      const holds = Array.isArray(held) ? held.includes(approver.value) : held === approver.value || (typeof held === 'string' && held.split(' ').includes(approver.value));
      if (!holds) throw new OAuthError(OAuthErrorCode.InsufficientScope, `the token's ${approver.claim} claim does not hold ${approver.value}: not an approver`);
      const name = nameIn(claims, approver.nameClaim);
      if (name === undefined) throw new OAuthError(OAuthErrorCode.InvalidToken, `the token's ${approver.nameClaim} claim does not name an approver`);
      return `approver:${name}`;
    });
  }

  private async principalOf(
    authorization: string,
    requiredScopes: readonly string[],
    principal: (claims: JWTPayload) => string,
  ): Promise<{ actor: string } | { refused: OAuthRefusal }> {
    try {
      const info = await verifyBearerToken(authorization, {
        verifier: { verifyAccessToken: (token) => this.verify(token) },
        expectedResource: new URL(this.config.resource),
        requiredScopes: [...requiredScopes],
        resourceMetadataUrl: this.metadataUrl,
      });
      return { actor: principal((info.extra as { claims: JWTPayload }).claims) };
    } catch (error) {
      const response = bearerAuthChallengeResponse(error, { requiredScopes: [...requiredScopes], resourceMetadataUrl: this.metadataUrl });
      // The gateway's own trouble (the provider unreachable) is logged with its details and told in general terms.
      const ownTrouble = !(error instanceof OAuthError) || error.code === OAuthErrorCode.ServerError;
      if (ownTrouble) this.log.warn(`checking an access token failed: ${(error as Error).message}`);
      const description = ownTrouble ? "the identity provider's keys could not be read to check the token; try again" : error.message;
      return { refused: { status: response.status, challenge: response.headers.get('www-authenticate') ?? this.challengeWithoutToken(), description } };
    }
  }

  /** Signature (issuer's keys), issuer, audience and expiry, by jose; the claims go on for the principal. */
  private async verify(token: string): Promise<AuthInfo> {
    const keys = await this.signingKeys();
    const { resource, issuer } = this.config;
    const audience = [resource, resource.endsWith('/') ? resource.slice(0, -1) : `${resource}/`];
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, keys, { issuer, audience, algorithms: ALGORITHMS, requiredClaims: ['exp'] }));
    } catch (error) {
      throw new OAuthError(OAuthErrorCode.InvalidToken, refusalOf(error));
    }
    const scopes = typeof claims['scope'] === 'string' ? claims['scope'].split(' ').filter(Boolean) : Array.isArray(claims['scp']) ? (claims['scp'] as string[]) : [];
    const clientId = claims['client_id'] ?? claims['azp'] ?? claims.sub ?? '';
    return { token, clientId: String(clientId), scopes, expiresAt: claims.exp!, resource: new URL(resource), extra: { claims } };
  }

  /** The issuer's key set: `oauth.jwks_uri`, else its metadata's `jwks_uri` (OpenID discovery, then RFC 8414). */
  private signingKeys(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    this.keys ??= this.discoverKeys().catch((error: unknown) => {
      this.keys = undefined;
      throw new OAuthError(OAuthErrorCode.ServerError, `the issuer's keys could not be found: ${(error as Error).message}`);
    });
    return this.keys;
  }

  private async discoverKeys(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (this.config.jwksUri !== null) return createRemoteJWKSet(new URL(this.config.jwksUri));
    const issuer = this.config.issuer.replace(/\/$/, '');
    const url = new URL(this.config.issuer);
    const candidates = [`${issuer}/.well-known/openid-configuration`, `${url.origin}/.well-known/oauth-authorization-server${url.pathname === '/' ? '' : url.pathname}`];
    const failures: string[] = [];
    for (const candidate of candidates) {
      try {
        const metadata = (await this.fetchJson(candidate)) as { issuer?: unknown; jwks_uri?: unknown };
        if (metadata.issuer !== this.config.issuer) throw new Error(`${candidate} names the issuer ${String(metadata.issuer)}, not ${this.config.issuer}`);
        if (typeof metadata.jwks_uri !== 'string') throw new Error(`${candidate} has no jwks_uri`);
        return createRemoteJWKSet(new URL(metadata.jwks_uri));
      } catch (error) {
        failures.push(`${candidate}: ${(error as Error).message}`);
      }
    }
    throw new Error(failures.join('; '));
  }
}

function nameIn(claims: JWTPayload, claim: string): string | undefined {
  const value = claims[claim];
  return typeof value === 'string' && PRINCIPAL_NAME.test(value) ? value : undefined;
}

/** jose's refusal in words for the agent, never quoting the token. */
function refusalOf(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'the access token has expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return 'the access token is for another resource (aud), not this gateway';
    if (error.claim === 'iss') return 'the access token comes from another issuer';
    return `the access token's ${error.claim} claim is not valid: ${error.reason}`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed || error instanceof errors.JWKSNoMatchingKey) return "the access token's signature is not the issuer's";
  if (error instanceof errors.JOSEAlgNotAllowed) return 'the access token is signed with an algorithm this gateway does not take';
  return 'the access token is not a valid signed token';
}
