/**
 * Request headers a contract may not set, literally or from an argument. The gateway derives each of them from
 * the URL and the body, or they steer connections and proxies: a contract that sets one could send the
 * credential to another virtual host on the bound address (`Host`), smuggle or cut a request (`Content-Length`,
 * `Transfer-Encoding`), or have an intermediary route or re-interpret it (`Forwarded`, `X-Original-URL`, a method
 * override). The credential binding is checked against the URL's authority, which is the `Host` sent only
 * because no contract header can replace it.
 */
const FORBIDDEN: Readonly<Record<string, string>> = {
  // Where the request goes: derived from the URL.
  host: 'routes the request',
  // Message framing: derived from the body.
  'content-length': 'frames the message',
  'transfer-encoding': 'frames the message',
  te: 'is hop-by-hop',
  trailer: 'frames the message',
  expect: 'changes how the body is sent',
  // Hop-by-hop (RFC 9110 section 7.6.1) and connection control.
  connection: 'is hop-by-hop',
  'keep-alive': 'is hop-by-hop',
  upgrade: 'is hop-by-hop',
  'http2-settings': 'is hop-by-hop',
  // Routing hints that reverse proxies and frameworks honour.
  forwarded: 'routes the request',
  'x-original-url': 'routes the request',
  'x-rewrite-url': 'routes the request',
  'x-host': 'routes the request',
  'x-original-host': 'routes the request',
  // Method overrides: the request would do what its method and class do not say.
  'x-http-method-override': 'overrides the method',
  'x-http-method': 'overrides the method',
  'x-method-override': 'overrides the method',
};
/** Whole families: `Proxy-*` (hop-by-hop proxy control, `Proxy-Authorization` included) and `X-Forwarded-*`. */
const FORBIDDEN_PREFIXES: readonly [string, string][] = [
  ['proxy-', 'is for proxies (hop-by-hop)'],
  ['x-forwarded-', 'routes the request'],
];

/** Why a contract may not set header `name` (any case), or `undefined` when it may. */
export function reservedHeaderReason(name: string): string | undefined {
  const lower = name.toLowerCase();
  const what = FORBIDDEN[lower] ?? FORBIDDEN_PREFIXES.find(([prefix]) => lower.startsWith(prefix))?.[1];
  return what === undefined ? undefined : `header '${name}' ${what}: the gateway derives it from the URL and the body, or leaves it out; a contract may not set it`;
}
