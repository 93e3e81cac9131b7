import { describeCredential } from './secret-detection';

/** What a credential reference may be made of: a name, never the credential itself. */
export const CREDENTIAL_REF_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:/-]*$/;

export const CREDENTIAL_REF_RULE = "must name a credential (letters, digits, '_', '.', ':', '/', '-'), never contain one";

/** True when `text` is a valid credential reference: the allowed characters, and nothing that looks like a secret. */
export function isCredentialRef(text: string): boolean {
  return CREDENTIAL_REF_PATTERN.test(text) && describeCredential(text) === undefined;
}
