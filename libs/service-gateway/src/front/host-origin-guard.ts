import { GatewayConfigError, isLoopbackHost, LOOPBACK_HOSTS, type GatewayConfig } from '@oncegate/host-config';

export { isLoopbackHost, LOOPBACK_HOSTS } from '@oncegate/host-config';

/**
 * DNS-rebinding protection for every endpoint on the gateway's listener: the `Host` a request names must be one
 * the gateway is reached by, and a browser's `Origin`, when present, must be the same origin or one configured.
 * A page on a hostile site whose name was re-pointed at 127.0.0.1 sends its own name in both, so it is refused
 * before anything is read, authenticated or recorded.
 */
export interface HostOriginRules {
  /** Host names (optionally `name:port`, or `*.domain` for its subdomains) requests may name in `Host`. */
  readonly allowedHosts: readonly string[];
  /** Origins (`scheme://host[:port]`) allowed besides the gateway's own. */
  readonly allowedOrigins: readonly string[];
}

export type GuardVerdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

/** `host[:port]` as a URL would read it; `undefined` when it is not a host. */
function parseAuthority(authority: string): { hostname: string; port: string } | undefined {
  if (authority.length === 0 || /[\s/?#@\\]/.test(authority)) return undefined;
  try {
    const url = new URL(`http://${authority}`);
    return { hostname: url.hostname.toLowerCase(), port: url.port };
  } catch {
    return undefined;
  }
}

function hostAllowed(authority: { hostname: string; port: string }, allowed: readonly string[]): boolean {
  return allowed.some((entry) => {
    const wanted = entry.toLowerCase();
    if (wanted.startsWith('*.')) return authority.hostname.endsWith(wanted.slice(1));
    const rule = parseAuthority(wanted);
    if (rule === undefined || rule.hostname !== authority.hostname) return false;
    return rule.port === '' || rule.port === authority.port;
  });
}

export function checkHostAndOrigin(
  headers: { readonly host?: string | undefined; readonly origin?: string | string[] | undefined },
  rules: HostOriginRules,
): GuardVerdict {
  const host = headers.host === undefined ? undefined : parseAuthority(headers.host);
  if (host === undefined || !hostAllowed(host, rules.allowedHosts)) {
    return {
      allowed: false,
      reason: `Forbidden: Host '${headers.host ?? ''}' is not a name this gateway answers to; allow it with listen.allowed_hosts`,
    };
  }
  const origin = Array.isArray(headers.origin) ? headers.origin[0] : headers.origin;
  if (origin === undefined) return { allowed: true };
  let parsed: URL | undefined;
  try {
    parsed = origin === 'null' ? undefined : new URL(origin);
  } catch {
    parsed = undefined;
  }
  const sameOrigin = parsed !== undefined && parsed.host.toLowerCase() === headers.host!.toLowerCase();
  const configured = parsed !== undefined && rules.allowedOrigins.some((allowed) => allowed.toLowerCase().replace(/\/$/, '') === parsed!.origin.toLowerCase());
  if (sameOrigin || configured) return { allowed: true };
  return { allowed: false, reason: `Forbidden: Origin '${origin}' is not allowed; allow it with listen.allowed_origins` };
}

/**
 * The `Host` and `Origin` rules of the listener: the configured names, or the loopback names when the gateway
 * listens on loopback. A gateway reachable from elsewhere must say which names it answers to.
 */
export function hostRulesOf(config: GatewayConfig): HostOriginRules {
  if (config.allowedHosts !== null) return { allowedHosts: config.allowedHosts, allowedOrigins: config.allowedOrigins };
  if (!isLoopbackHost(config.host)) {
    throw new GatewayConfigError([
      {
        file: config.source,
        path: 'listen.allowed_hosts',
        line: 0,
        column: 0,
        reason: `required when listen.host (${config.host}) is not a loopback address: the host names clients reach the gateway by`,
      },
    ]);
  }
  return { allowedHosts: LOOPBACK_HOSTS, allowedOrigins: config.allowedOrigins };
}
