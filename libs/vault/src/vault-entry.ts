import { canonicalJsonUnchecked } from '@oncegate/fingerprint';
import { CREDENTIAL_REF_RULE, isCredentialRef, reservedHeaderReason } from '@oncegate/contracts';
import { BindingSyntaxError, formatBinding, parseBinding, type BindingChannel } from './credential-bindings';
import { VaultReasonError } from './vault-errors';

/**
 * What a vault entry is, apart from its value:
 * - `bearer`: sent as `Authorization: Bearer <value>`;
 * - `basic`: `username` and the value as password, sent as `Authorization: Basic base64(username:password)`;
 * - `header`: the value in the header `header`, after `scheme` and a space when one is given;
 * - `ssh_key`: an OpenSSH or PEM private key for SSH key authentication;
 * - `password`: a secret a plugin channel logs in with (a database user's password), bound to `host:port`.
 */
export const CREDENTIAL_KINDS = ['bearer', 'basic', 'header', 'ssh_key', 'password'] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

/** `per_use`: every use of the credential needs an approval first (the authorization ladder reads it). */
export const CREDENTIAL_APPROVALS = ['none', 'per_use'] as const;
export type CredentialApproval = (typeof CREDENTIAL_APPROVALS)[number];

/**
 * The metadata of one stored version of a credential. Its canonical JSON (RFC 8785) is the additional
 * authenticated data of the encrypted value, so the value opens only with exactly this metadata.
 */
export interface CredentialMetadata {
  readonly ref: string;
  readonly kind: CredentialKind;
  /** `header` kind only; `null` otherwise. */
  readonly header: string | null;
  /** `header` kind only (optional); `null` otherwise. */
  readonly scheme: string | null;
  /** `basic` kind only; `null` otherwise. */
  readonly username: string | null;
  /** Canonical binding texts (see `formatBinding`), in the order given. */
  readonly bindings: readonly string[];
  readonly approval: CredentialApproval;
  /** 1 for the first value stored under `ref`, then one more for each replacement. */
  readonly version: number;
}

/** What an operator asks to store (the value travels separately). */
export interface CredentialInput {
  readonly ref: string;
  readonly kind: string;
  readonly bindings: readonly string[];
  readonly header?: string | undefined;
  readonly scheme?: string | undefined;
  readonly username?: string | undefined;
  readonly approval?: string | undefined;
}

/** A credential that cannot be stored as asked; the message says what to change and never holds the value. */
export class CredentialInputError extends VaultReasonError {
  readonly kind = 'credential_input_invalid' as const;
}

/** A value that cannot be stored (empty, not a key, a line break in a header value); never quoted. */
export class CredentialValueError extends VaultReasonError {
  readonly kind = 'credential_value_invalid' as const;
}

/** HTTP field-name token (RFC 9110). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the gateway sets itself, besides those no request template may set (`reservedHeaderReason`). */
const GATEWAY_HEADERS = new Set(['content-type', 'idempotency-key']);
const PRIVATE_KEY = /^-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\r?\n[\s\S]+\r?\n-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----\s*$/;

export function channelOf(kind: CredentialKind): BindingChannel {
  return kind === 'ssh_key' ? 'ssh' : kind === 'password' ? 'host' : 'http';
}

function refuseOption(kind: CredentialKind, name: string, value: string | undefined): void {
  if (value !== undefined) throw new CredentialInputError(`--${name} does not apply to a ${kind} credential`);
}

/**
 * Checks what an operator asked to store and returns the metadata of its next version.
 *
 * @throws CredentialInputError naming the first problem
 */
export function credentialMetadata(input: CredentialInput, version: number): CredentialMetadata {
  // Not quoted: a reference that looks like a secret may be one pasted in the wrong place.
  if (!isCredentialRef(input.ref)) throw new CredentialInputError(`the credential reference ${CREDENTIAL_REF_RULE}`);
  const kind = CREDENTIAL_KINDS.find((candidate) => candidate === input.kind);
  if (kind === undefined) throw new CredentialInputError(`'${input.kind}' is not a credential kind; use one of: ${CREDENTIAL_KINDS.join(', ')}`);
  const approval = CREDENTIAL_APPROVALS.find((candidate) => candidate === (input.approval ?? 'none'));
  if (approval === undefined) {
    throw new CredentialInputError(`'${input.approval}' is not an approval requirement; use one of: ${CREDENTIAL_APPROVALS.join(', ')}`);
  }
  if (input.bindings.length === 0) throw new CredentialInputError('bind the credential to at least one host with --bind host[:port][/path-prefix]');
  const bindings: string[] = [];
  for (const text of input.bindings) {
    try {
      const binding = formatBinding(parseBinding(text, channelOf(kind)));
      if (!bindings.includes(binding)) bindings.push(binding);
    } catch (error) {
      if (error instanceof BindingSyntaxError) throw new CredentialInputError(error.message);
      throw error;
    }
  }
  let header: string | null = null;
  let scheme: string | null = null;
  let username: string | null = null;
  switch (kind) {
    case 'bearer':
    case 'ssh_key':
    case 'password':
      refuseOption(kind, 'header', input.header);
      refuseOption(kind, 'scheme', input.scheme);
      refuseOption(kind, 'username', input.username);
      break;
    case 'basic':
      refuseOption(kind, 'header', input.header);
      refuseOption(kind, 'scheme', input.scheme);
      if (input.username === undefined || input.username === '') throw new CredentialInputError('a basic credential needs --username');
      if (/[:\x00-\x1f\x7f]/.test(input.username)) throw new CredentialInputError('the username may hold no ":" and no control character');
      username = input.username;
      break;
    case 'header':
      refuseOption(kind, 'username', input.username);
      if (input.header === undefined) throw new CredentialInputError('a header credential needs --header <name>');
      if (!TOKEN.test(input.header)) throw new CredentialInputError(`'${input.header}' is not a header name`);
      if (GATEWAY_HEADERS.has(input.header.toLowerCase()) || reservedHeaderReason(input.header) !== undefined) throw new CredentialInputError(`the gateway sets '${input.header}' itself; name another header`);
      header = input.header;
      if (input.scheme !== undefined) {
        if (!TOKEN.test(input.scheme)) throw new CredentialInputError(`'${input.scheme}' is not a scheme word (e.g. Token)`);
        scheme = input.scheme;
      }
      break;
    default:
      return kind satisfies never;
  }
  return { ref: input.ref, kind, header, scheme, username, bindings, approval, version };
}

/**
 * Makes the value as given ready to store, or throws `CredentialValueError` saying why (never quoting it): an empty value is
 * refused; one trailing line break (from `echo` or a file) is dropped except from a key; a header value may
 * hold no line break or NUL; an SSH key must be a whole PEM/OpenSSH private key.
 */
export function credentialValue(kind: CredentialKind, raw: string): string {
  const value = kind === 'ssh_key' ? raw : raw.replace(/\r?\n$/, '');
  if (value.trim() === '') throw new CredentialValueError('the value is empty');
  if (kind === 'ssh_key') {
    if (!PRIVATE_KEY.test(value.trim() + '\n')) {
      throw new CredentialValueError('the value is not a private key (expected -----BEGIN … PRIVATE KEY----- … -----END … PRIVATE KEY-----)');
    }
    return value;
  }
  if (/[\r\n\0]/.test(value)) throw new CredentialValueError(`the value holds a line break or NUL, which ${kind === 'password' ? 'a password' : 'a header'} cannot carry`);
  return value;
}

/** The additional authenticated data of a value: the canonical JSON of its metadata. */
export function metadataAad(metadata: CredentialMetadata): Buffer {
  const canonical = canonicalJsonUnchecked({
    ref: metadata.ref,
    kind: metadata.kind,
    header: metadata.header,
    scheme: metadata.scheme,
    username: metadata.username,
    bindings: [...metadata.bindings],
    approval: metadata.approval,
    version: metadata.version,
  });
  if (canonical === undefined) throw new Error('credential metadata did not canonicalise');
  return Buffer.from(canonical, 'utf8');
}
