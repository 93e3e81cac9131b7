import { isCredentialRef, reservedHeaderReason } from '@oncegate/contracts';

/** The vault kinds (libs/vault, `CREDENTIAL_KINDS`) an OpenAPI security scheme can stand for. */
export type MappedCredentialKind = 'bearer' | 'basic' | 'header';

/** A security scheme the vault can hold a credential for. */
export interface MappedScheme {
  /** The scheme's name in `components.securitySchemes`. */
  readonly scheme: string;
  readonly kind: MappedCredentialKind;
  /** `header` kind: the header the key goes in. */
  readonly header?: string;
}

/** An OpenAPI Security Scheme Object, as far as the import reads it. */
export interface SecuritySchemeObject {
  readonly type: string;
  readonly scheme?: string;
  readonly in?: string;
  readonly name?: string;
}

export type SecurityRequirement = Readonly<Record<string, readonly string[]>>;

/** What an operation's security comes to: the credential it names (if any), and what could not be mapped. */
export interface OperationSecurity {
  readonly credential: MappedScheme | undefined;
  readonly notes: readonly string[];
}

/** HTTP field-name token (RFC 9110), as the vault takes a header credential's name. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the gateway sets itself, which the vault refuses for a header credential. */
const GATEWAY_HEADERS = new Set(['content-type', 'idempotency-key']);

function describe(scheme: SecuritySchemeObject): string {
  if (scheme.type === 'http') return `http ${scheme.scheme ?? ''}`.trim();
  if (scheme.type === 'apiKey') return `apiKey in ${scheme.in ?? '?'}`;
  return scheme.type;
}

/** The vault kind for one scheme, or why there is none. */
function mapScheme(name: string, scheme: SecuritySchemeObject): MappedScheme | string {
  switch (scheme.type) {
    case 'http': {
      const kind = (scheme.scheme ?? '').toLowerCase();
      if (kind === 'bearer') return { scheme: name, kind: 'bearer' };
      if (kind === 'basic') return { scheme: name, kind: 'basic' };
      return `HTTP '${scheme.scheme}' authentication is not a kind the vault sends (bearer, basic, header)`;
    }
    case 'apiKey': {
      const header = scheme.name ?? '';
      if (scheme.in === 'header') {
        if (!TOKEN.test(header) || GATEWAY_HEADERS.has(header.toLowerCase()) || reservedHeaderReason(header) !== undefined) return `the gateway sets header '${header}' itself`;
        return { scheme: name, kind: 'header', header };
      }
      return `an API key in the ${scheme.in}: the gateway sends credentials in headers only (URLs are logged and recorded)`;
    }
    case 'oauth2':
    case 'openIdConnect':
      return 'the gateway runs no OAuth 2.0 or OpenID Connect flow';
    case 'mutualTLS':
      return 'client certificates are not a credential the vault holds';
    default:
      return 'an unknown kind of scheme';
  }
}

/**
 * Maps an operation's security requirement (its own, else the document's) to one credential. The alternatives are
 * tried in the document's order and the first the vault can hold is taken; `{}` (no credential needed) counts as
 * one. An alternative that needs several schemes at once cannot be: a contract names one credential.
 */
export function operationSecurity(
  requirements: readonly SecurityRequirement[] | undefined,
  schemes: Readonly<Record<string, SecuritySchemeObject>>,
): OperationSecurity {
  if (requirements === undefined || requirements.length === 0) return { credential: undefined, notes: [] };
  const notes: string[] = [];
  let chosen: MappedScheme | 'none' | undefined;
  for (const requirement of requirements) {
    const names = Object.keys(requirement);
    if (names.length === 0) {
      chosen ??= 'none';
      continue;
    }
    if (names.length > 1) {
      notes.push(`security requirement ${names.join(' + ')} is not mapped: it needs ${names.length} credentials at once, and a contract names one`);
      continue;
    }
    const name = names[0]!;
    const scheme = schemes[name];
    const mapped = scheme === undefined ? 'the document does not define it' : mapScheme(name, scheme);
    if (typeof mapped === 'string') {
      notes.push(`security scheme '${name}'${scheme === undefined ? '' : ` (${describe(scheme)})`} is not mapped: ${mapped}`);
      continue;
    }
    chosen ??= mapped;
  }
  if (chosen === undefined) notes.push('no credential_ref: none of the security requirements maps to a vault credential, so calls go without one');
  return { credential: chosen === 'none' ? undefined : chosen, notes };
}

/** A credential reference named after a security scheme: its name with characters a reference cannot hold made `_`. */
export function credentialRefOf(scheme: string): string {
  const ref = scheme.replace(/[^A-Za-z0-9_.:/-]+/g, '_').replace(/^[^A-Za-z0-9]+/, '');
  return ref !== '' && isCredentialRef(ref) ? ref : 'openapi-credential';
}
