import { Logger } from '@nestjs/common';
import {
  bearerAuthChallengeResponse,
  getOAuthProtectedResourceMetadataUrl,
  OAuthError,
  OAuthErrorCode,
  verifyBearerToken,
  type AuthInfo,
} from '@modelcontextprotocol/server';
import { errors, jwtVerify, type JWTPayload } from 'jose';
import { systemClock } from '@oncegate/execution-journal';
import type { OAuthConfig } from '@oncegate/host-config';
import { IssuerKeys, IssuerKeysUnavailable, type IssuerKeysOptions } from './issuer-keys';

/** A compact JWS: three base64url parts. The gateway's own agent and approver tokens never have a dot. */
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** What `agent:<name>` and `approver:<name>` take (the principal directories' names). */
const PRINCIPAL_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
/** Signatures an access token may carry: asymmetric only, so no shared secret can mint one. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** What a token gets while the issuer's keys cannot be read; the details go to the log. */
const KEYS_UNREADABLE = "the identity provider's keys could not be read to check the token; try again";

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
 * the authorization server. The token itself is never logged or repeated. When the issuer's keys are read, and what a
 * token gets while they cannot be, is `IssuerKeys`'s.
 */
export class OAuthResource {
  private readonly log = new Logger('oauth');
  private readonly keys: IssuerKeys;
  /** Where the metadata document is, as the challenge names it. */
  readonly metadataUrl: string;
  /** The paths the document is served at: the RFC 9728 one for the resource, and the origin's root one. */
  readonly metadataPaths: readonly string[];

  constructor(
    private readonly config: OAuthConfig,
    options: Partial<IssuerKeysOptions> = {},
  ) {
    this.keys = new IssuerKeys(config, { ...options, clock: options.clock ?? systemClock, fetchJson: options.fetchJson ?? readMetadata });
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
      // The keys could not be read: the gateway's trouble, not the token's (each failed read is logged where it failed).
      if (error instanceof IssuerKeysUnavailable) return { refused: { status: 503, challenge: this.challengeWithoutToken(), description: KEYS_UNREADABLE } };
      const response = bearerAuthChallengeResponse(error, { requiredScopes: [...requiredScopes], resourceMetadataUrl: this.metadataUrl });
      // Any other trouble of the gateway's own is logged with its details and told in general terms.
      const ownTrouble = !(error instanceof OAuthError) || error.code === OAuthErrorCode.ServerError;
      if (ownTrouble) this.log.warn(`checking an access token failed: ${(error as Error).message}`);
      const description = ownTrouble ? KEYS_UNREADABLE : error.message;
      return { refused: { status: response.status, challenge: response.headers.get('www-authenticate') ?? this.challengeWithoutToken(), description } };
    }
  }

  /** Signature (issuer's keys), issuer, audience and expiry, by jose; the claims go on for the principal. */
  private async verify(token: string): Promise<AuthInfo> {
    const { resource, issuer } = this.config;
    const audience = [resource, resource.endsWith('/') ? resource.slice(0, -1) : `${resource}/`];
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, this.keys.keyOf, { issuer, audience, algorithms: ALGORITHMS, requiredClaims: ['exp'] }));
    } catch (error) {
      if (error instanceof IssuerKeysUnavailable) throw error;
      throw new OAuthError(OAuthErrorCode.InvalidToken, refusalOf(error));
    }
    const scopes = typeof claims['scope'] === 'string' ? claims['scope'].split(' ').filter(Boolean) : Array.isArray(claims['scp']) ? (claims['scp'] as string[]) : [];
    const clientId = claims['client_id'] ?? claims['azp'] ?? claims.sub ?? '';
    return { token, clientId: String(clientId), scopes, expiresAt: claims.exp!, resource: new URL(resource), extra: { claims } };
  }
}

/** A metadata document of the issuer, as JSON. */
async function readMetadata(url: string): Promise<unknown> {
  const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return response.json();
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
