/** What stands where a secret was. */
export const HIDDEN = '[redacted]';

/**
 * Replaces every whole occurrence of each secret in `text` (longest first, so a secret is hidden before a part of it
 * that is another secret). Only whole values are hidden: a body is hidden before it is cut, so no cut leaves the
 * start of a secret behind, and a text merely starting like a secret says nothing about it.
 */
export function hideSecrets(text: string, secrets: readonly string[]): string {
  let shown = text;
  for (const secret of longestFirst(secrets)) shown = shown.replaceAll(secret, HIDDEN);
  return shown;
}

function longestFirst(secrets: readonly string[]): string[] {
  return secrets.filter((value) => value !== '').sort((a, b) => b.length - a.length);
}

/** `hideSecrets` on bytes (a body that is not text): each secret's UTF-8 bytes, wherever they stand. */
export function hideSecretBytes(bytes: Buffer, secrets: readonly string[]): Buffer {
  let shown = bytes;
  for (const secret of longestFirst(secrets)) {
    const needle = Buffer.from(secret, 'utf8');
    const parts: Buffer[] = [];
    let from = 0;
    for (let at = shown.indexOf(needle); at !== -1; at = shown.indexOf(needle, from)) {
      parts.push(shown.subarray(from, at), Buffer.from(HIDDEN, 'utf8'));
      from = at + needle.length;
    }
    if (parts.length > 0) shown = Buffer.concat([...parts, shown.subarray(from)]);
  }
  return shown;
}
