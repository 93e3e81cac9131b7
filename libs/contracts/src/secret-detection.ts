/**
 * Recognising credentials written literally in a contract. Credentials come by reference only
 * (`credential_ref`); a contract is a file people commit, review and paste into tickets.
 */

/** Headers that carry credentials: the gateway sets them from `credential_ref`, a contract never does. */
export const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'] as const;

const CREDENTIAL_NAME = /(^|[_.-])(pass(word|wd)?|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|session[_-]?id|auth)$/i;

/** True for names such as `X-Api-Key`, `access_token`, `password`, `client_secret`. */
export function isCredentialName(name: string): boolean {
  return CREDENTIAL_NAME.test(name);
}

const KNOWN_FORMS: readonly [RegExp, string][] = [
  [/^\s*(bearer|basic|digest|token|negotiate)\s+\S{6,}/i, 'an Authorization credential'],
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----/, 'a private key'],
  [/\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/, 'a JSON Web Token'],
  [/\b(sk|rk)_(live|test)_[A-Za-z0-9]{10,}/, 'an API secret key'],
  [/\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}|\bglpat-[A-Za-z0-9_-]{20,}/, 'an access token'],
  [/\bxox[abprs]-[A-Za-z0-9-]{10,}/, 'a Slack token'],
  [/\b(AKIA|ASIA)[0-9A-Z]{16}\b/, 'a cloud access key'],
  [/\bAIza[0-9A-Za-z_-]{35}\b/, 'an API key'],
  [/\bnpm_[A-Za-z0-9]{36}\b/, 'an access token'],
];

const RANDOM_RUN = /[A-Za-z0-9+/=_-]{32,}/g;
/** A piece of a run that reads as a word or a number (`markers`, `Release`, `CI`, `2024`), not as random. */
const WORD = /^(?:[A-Z]?[a-z]+|[A-Z]+|[0-9]+)$/;

/** Bits per character of a string's own symbol distribution. */
function entropy(text: string): number {
  const counts = new Map<string, number>();
  for (const char of text) counts.set(char, (counts.get(char) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / text.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/**
 * What kind of credential `text` looks like, or `undefined`. Besides well-known token forms, a run of token
 * characters counts as a token when, once the words and numbers it joins with `/`, `-` and `_` are set aside,
 * 32 or more characters are left that mix upper case, lower case and digits with high entropy. Hex digests,
 * UUIDs and paths with one random name in them (`/tmp/tmp.Xo8fT3kQ1z/oncegate-markers`, as mktemp makes
 * them) do not; a token inside a path or cut by separators still does.
 */
export function describeCredential(text: string): string | undefined {
  for (const [pattern, what] of KNOWN_FORMS) if (pattern.test(text)) return what;
  for (const [run] of text.matchAll(RANDOM_RUN)) {
    const random = run
      .split(/[/_-]/)
      .filter((piece) => !WORD.test(piece))
      .join('');
    if (random.length < 32) continue;
    const mixed = /[a-z]/.test(random) && /[A-Z]/.test(random) && /[0-9]/.test(random);
    if (mixed && entropy(random) >= 4.2) return 'a token';
  }
  return undefined;
}
