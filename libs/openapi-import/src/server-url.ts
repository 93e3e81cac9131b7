import { ServerUrlError } from './import-errors';

/** An OpenAPI Server Object, as far as the import reads it. */
export interface ServerObject {
  readonly url: string;
  readonly variables?: Readonly<Record<string, { readonly default: string }>>;
}

/**
 * `--server <url>`: an absolute http(s) URL without user info, query or fragment (the operation paths are joined to
 * it), returned without a trailing `/`.
 *
 * @throws ServerUrlError saying what it must be
 */
export function serverOption(text: string): string {
  if (/[{}]/.test(text)) throw new ServerUrlError('--server takes the URL itself, with no {variables}');
  return absoluteServer(text, '--server');
}

/**
 * A document's server as a URL the operation paths are joined to: its `{variables}` replaced by their defaults,
 * resolved against the URL the document came from when it is relative (as OpenAPI says), and without a trailing `/`.
 *
 * @throws ServerUrlError when it stays relative (a document read from a file) or is not an http(s) URL
 */
export function documentServer(server: ServerObject, baseUrl: string | undefined): string {
  const url = server.url.replace(/\{([^}]*)\}/g, (_, name: string) => {
    const value = server.variables?.[name]?.default;
    if (value === undefined) throw new ServerUrlError(`the document's server '${server.url}' has a variable {${name}} without a default; give the URL with --server`);
    return value;
  });
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(url)) {
    if (baseUrl === undefined) {
      throw new ServerUrlError(`the document's server '${url}' is relative (to wherever the document is served); give the API's absolute URL with --server https://…`);
    }
    return absoluteServer(new URL(url, baseUrl).href, 'the server');
  }
  return absoluteServer(url, `the document's server '${url}'`);
}

function absoluteServer(text: string, what: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ServerUrlError(`${what} is not a URL; write it as https://host[:port][/path]`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ServerUrlError(`${what} is not an http:// or https:// URL`);
  // Not echoed: a user name or password in a URL is a credential, and credentials come from the vault.
  if (url.username !== '' || url.password !== '') throw new ServerUrlError(`${what.startsWith('the document') ? "the document's server" : what} holds a user name or password; credentials come from the vault, by reference`);
  if (url.search !== '' || url.hash !== '') throw new ServerUrlError(`${what} has a query or fragment; the operation paths are joined to it`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/**
 * The vault binding of a server (`host[:port]`): a plain http server names its port, since a binding without one
 * means https on 443 (the vault never sends a credential in clear by surprise).
 */
export function bindingOf(serverUrl: string): string {
  const url = new URL(serverUrl);
  if (url.protocol === 'http:') return `${url.hostname}:${url.port === '' ? 80 : url.port}`;
  return url.port === '' ? url.hostname : `${url.hostname}:${url.port}`;
}
