/**
 * Where a credential may be sent. A binding is `host[:port][/path-prefix]`:
 *
 * - HTTP: the host is compared case-insensitively; without a port the binding means https on 443 (plain http is
 *   allowed only by a binding that names its port, so a credential is never sent in clear by surprise); a path
 *   prefix matches whole segments (`/config` matches `/config` and `/config/a`, not `/configx`) of the normalised
 *   path, and a path holding an encoded separator (`%2F`, `%5C`) or a backslash never matches a prefix: a server
 *   that decodes it would see another path than the one checked; the query is not part of the match.
 * - SSH: `host[:port]`, default port 22, never a path.
 * - A plugin channel's server (`host`: a database, a broker): `host:port`, the port always named, never a path.
 *
 * Pure: no I/O.
 */

export type BindingChannel = 'http' | 'ssh' | 'host';

export interface Binding {
  /** Lower case, without a trailing dot; an IPv6 address keeps its brackets. */
  readonly host: string;
  /** `null`: the default port of the channel (HTTP: of the URL's scheme). */
  readonly port: number | null;
  /** `null`: any path. Otherwise starts with `/` and has no trailing `/` (except `/` itself). */
  readonly pathPrefix: string | null;
}

/** Where a credential is about to be sent. */
export type BindingTarget =
  | { readonly channel: 'http'; readonly url: string }
  | { readonly channel: 'ssh'; readonly host: string; readonly port: number }
  | { readonly channel: 'host'; readonly host: string; readonly port: number };

export class BindingSyntaxError extends Error {
  readonly kind = 'binding_invalid' as const;
  constructor(
    readonly text: string,
    readonly reason: string,
  ) {
    super(`'${text}' is not a binding: ${reason}; write host[:port][/path-prefix]`);
    this.name = 'BindingSyntaxError';
  }
}

const BINDING = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?)(?::(\d{1,5}))?(\/.*)?$/;
/** What may appear in a path prefix: RFC 3986 path characters, escapes included. */
const PATH = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*$/;

function normaliseHost(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}

/** Parses one binding of a credential used on `channel`; throws `BindingSyntaxError` with the reason. */
export function parseBinding(text: string, channel: BindingChannel): Binding {
  if (text.trim() === '') throw new BindingSyntaxError(text, 'it is empty');
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) throw new BindingSyntaxError(text, 'leave out the scheme');
  const match = BINDING.exec(text);
  if (match === null) throw new BindingSyntaxError(text, 'the host is not a host name or an address');
  const [, host = '', portText, path] = match;
  const port = portText === undefined ? null : Number(portText);
  if (port !== null && (port < 1 || port > 65535)) throw new BindingSyntaxError(text, `port ${portText} is out of range 1-65535`);
  if (path !== undefined && channel === 'ssh') throw new BindingSyntaxError(text, 'an SSH key is bound to host[:port], without a path');
  if (channel === 'host' && (path !== undefined || port === null)) throw new BindingSyntaxError(text, 'a password is bound to host:port, the port named and without a path');
  if (path !== undefined && !PATH.test(path)) throw new BindingSyntaxError(text, 'the path prefix may hold no spaces, query or fragment');
  if (path !== undefined && path.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new BindingSyntaxError(text, "the path prefix may hold no '.' or '..' segment");
  }
  const pathPrefix = path === undefined ? null : path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
  return { host: normaliseHost(host), port, pathPrefix };
}

/** The canonical text of a binding (what the vault stores and shows). */
export function formatBinding(binding: Binding): string {
  return `${binding.host}${binding.port === null ? '' : `:${binding.port}`}${binding.pathPrefix ?? ''}`;
}

interface ResolvedTarget {
  readonly host: string;
  readonly port: number;
  /** `null` for SSH. */
  readonly path: string | null;
  /** The port a binding without one stands for; `null` when no binding without a port allows it (plain http). */
  readonly defaultPort: number | null;
}

function resolveTarget(target: BindingTarget): ResolvedTarget | undefined {
  if (target.channel === 'ssh') return { host: normaliseHost(target.host), port: target.port, path: null, defaultPort: 22 };
  if (target.channel === 'host') return { host: normaliseHost(target.host), port: target.port, path: null, defaultPort: null };
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  const schemePort = url.protocol === 'https:' ? 443 : 80;
  return {
    host: normaliseHost(url.hostname),
    port: url.port === '' ? schemePort : Number(url.port),
    path: url.pathname || '/',
    defaultPort: url.protocol === 'https:' ? 443 : null,
  };
}

/** `host:port/path` of a target, as messages show it. */
export function describeTarget(target: BindingTarget): string {
  const resolved = resolveTarget(target);
  if (resolved === undefined) return target.channel === 'http' ? `an unparsable URL` : `${target.host}:${target.port}`;
  return `${resolved.host}:${resolved.port}${resolved.path ?? ''}`;
}

/** A separator a server may decode after the check: `%2F` (/), `%5C` (\\), or a raw backslash. */
const HIDDEN_SEPARATOR = /%2f|%5c|\\/i;

function pathMatches(prefix: string | null, path: string | null): boolean {
  if (prefix === null || prefix === '/') return true;
  if (path === null || HIDDEN_SEPARATOR.test(path)) return false;
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** Does `binding` allow sending to `target`? */
export function bindingMatches(binding: Binding, target: BindingTarget): boolean {
  const resolved = resolveTarget(target);
  if (resolved === undefined) return false;
  return (
    binding.host === resolved.host &&
    (binding.port ?? resolved.defaultPort) === resolved.port &&
    (target.channel === 'http' ? pathMatches(binding.pathPrefix, resolved.path) : binding.pathPrefix === null)
  );
}
