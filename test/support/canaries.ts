/** Every prefix of a secret long enough (6 characters or more) to say something of it. */
export function prefixesOf(secret: string): string[] {
  return Array.from({ length: Math.max(0, secret.length - 5) }, (_, i) => secret.slice(0, i + 6));
}
