/**
 * The PostgreSQL store's connection URL may hold a password (in its user-info, or as a `password` query
 * parameter node-postgres reads). It is shown only with every password replaced by `***`, and any text that could
 * carry it (a driver's error) is scrubbed before it is printed.
 */

const SCHEMES = new Set(['postgres:', 'postgresql:']);
const REDACTED = '***';
/** Query parameters node-postgres takes as a password. */
const PASSWORD_PARAMETERS = /password/i;

/** Whether the text is a URL node-postgres connects with: `postgres://…` or `postgresql://…`. */
export function isPostgresUrl(text: string): boolean {
  try {
    return SCHEMES.has(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** The URL as it may be shown: each password replaced by `***`; text that is not a URL is not shown at all. */
export function redactedStoreUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return '(not a URL)';
  }
  if (url.password !== '') url.password = REDACTED;
  for (const name of [...url.searchParams.keys()]) {
    if (PASSWORD_PARAMETERS.test(name)) url.searchParams.set(name, REDACTED);
  }
  return url.toString().replaceAll(encodeURIComponent(REDACTED), REDACTED);
}

/** Every password the URL carries, as written and decoded, so they can be scrubbed from text. */
function passwordsOf(text: string): string[] {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return [];
  }
  const raw = [url.password, ...[...url.searchParams.entries()].filter(([name]) => PASSWORD_PARAMETERS.test(name)).map(([, value]) => value)];
  const forms = raw.filter((value) => value !== '').flatMap((value) => {
    try {
      return [value, decodeURIComponent(value)];
    } catch {
      return [value];
    }
  });
  return [...new Set(forms)].sort((a, b) => b.length - a.length);
}

/** `text` with the URL shown redacted and every password of the URL replaced by `***`. */
export function withoutStorePassword(text: string, url: string): string {
  let scrubbed = text.replaceAll(url, redactedStoreUrl(url));
  for (const password of passwordsOf(url)) scrubbed = scrubbed.replaceAll(password, REDACTED);
  return scrubbed;
}
