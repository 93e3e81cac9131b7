import fc from 'fast-check';

/** Which session a frame names: the fuzzer's own live one, none, one that never existed, one closed earlier, garbage. */
export type FrameSession = 'live' | 'none' | 'unknown' | 'closed' | 'malformed';
/** Which credential a frame carries. */
export type FrameToken = 'valid' | 'none' | 'unknown' | 'malformed' | 'lowercase_scheme';

/**
 * One generated HTTP request to the MCP endpoint. None of them may dispatch anything: tool calls always break
 * the tool's schema (or name no tool), so `ExecutionAccepted` after any frame is a finding.
 */
export interface FuzzFrame {
  /** The family it was drawn from, a row of the fuzzer's table. */
  readonly kind: string;
  readonly method: 'POST' | 'GET' | 'DELETE';
  readonly session: FrameSession;
  readonly token: FrameToken;
  /** Header overrides; `null` removes the header the fuzzer would otherwise send. */
  readonly headers: Readonly<Record<string, string | null>>;
  /** Raw body text, or raw bytes (invalid UTF-8); absent for GET and DELETE. */
  readonly body?: string | readonly number[];
  /** Bytes of padding past the gateway's request limit, appended at send time (never held in the sample). */
  readonly oversizeBy?: number;
  /** Sent twice at the same moment on the same session: the same JSON-RPC id in flight twice. */
  readonly twice?: boolean;
}

const TOOLS = ['set_config', 'send_payment', 'update_inventory', 'get_build', 'send_payout', 'execution_status'] as const;

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('\ud800', '\udfff', 'a\ud83dz', '\u0000', '\u202e', '{{args.name}}', '../../etc/passwd', '$(id)', '%00', 'x'.repeat(5_000)),
);

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.constantFrom(-0, 1e308, -1, 2 ** 53 + 1, Number.MIN_VALUE, true, null, [], {}) },
);

/** `{"a":{"a":…}}` or `[[[…]]]` nested `depth` levels, as text: deeper than any recursive builder could go. */
function nested(depth: number, array: boolean, inner = '0'): string {
  return array ? `${'['.repeat(depth)}${inner}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;
}

/** An own `__proto__` property (a computed key defines one; a literal would set the prototype). */
function withProto(object: Record<string, unknown>, value: unknown): Record<string, unknown> {
  return { ...object, ['__proto__']: value };
}

const jsonRpcId = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 1_000_000 }) },
  { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, 1.5, -1, true, {}, [], '') },
);

/** Arguments that break the named tool's schema, always. */
const brokenArguments = fc.oneof(
  fc.record({ unexpected_property: hostileValue }),
  fc.record({ name: fc.oneof(fc.integer(), fc.constant(null), fc.array(fc.integer())), value: hostileValue }),
  fc.record({ name: fc.constantFrom('Bad Name!', '', '\ud800', 'A'), value: fc.string() }),
  fc.record({ name: fc.constant('fz.proto'), value: fc.constant('x') }).map((args) => withProto(args, { polluted: true })),
  fc.record({ build_id: fc.constantFrom('not-a-number', '\udfff', ''), sku: hostileString }),
  fc.record({ payment_reference: fc.constant('short'), amount_cents: fc.constantFrom(0, -5, 1.5, '100') }),
  fc.constant({ constructor: { prototype: { polluted: true } } }),
);

const callParams = fc.oneof(
  { weight: 4, arbitrary: fc.record({ name: fc.constantFrom(...TOOLS), arguments: brokenArguments }) },
  { weight: 1, arbitrary: fc.record({ name: fc.oneof(fc.integer(), fc.constant(null), fc.constant({}), fc.array(fc.string())), arguments: fc.constant({}) }) },
  { weight: 1, arbitrary: fc.record({ name: fc.constantFrom(...TOOLS), arguments: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.integer())) }) },
  { weight: 1, arbitrary: fc.record({ name: fc.string({ maxLength: 30 }).map((s) => `no_such_${s}`), arguments: fc.constant({}) }) },
  { weight: 1, arbitrary: fc.record({ name: fc.constant('set_config'), arguments: fc.constant({ name: 'x', value: 'y', extra: 1 }), _meta: hostileValue }) },
  { weight: 1, arbitrary: fc.constantFrom(null, 'params', 42, [], {}) },
  { weight: 1, arbitrary: brokenArguments.map((args) => withProto({ name: 'set_config', arguments: args }, { name: 'get_build' })) },
);

const INITIALIZE_PARAMS = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } };

const initializeParams = fc.oneof(
  { weight: 3, arbitrary: fc.constant(INITIALIZE_PARAMS) },
  { weight: 1, arbitrary: fc.constantFrom({ ...INITIALIZE_PARAMS, protocolVersion: 20251125 }, { ...INITIALIZE_PARAMS, protocolVersion: '1999-01-01' }, { capabilities: {} }, null, 'init') },
  { weight: 1, arbitrary: fc.record({ protocolVersion: hostileValue, capabilities: hostileValue, clientInfo: hostileValue }) },
);

/** One JSON-RPC message (as a value), drawn from the families the table reports. */
const message = fc.oneof(
  { weight: 5, arbitrary: fc.record({ jsonrpc: fc.constant('2.0'), id: jsonRpcId, method: fc.constant('tools/call'), params: callParams }).map((m) => ['bad tools/call', m] as const) },
  { weight: 2, arbitrary: fc.record({ jsonrpc: fc.constant('2.0'), id: jsonRpcId, method: fc.constant('initialize'), params: initializeParams }).map((m) => ['initialize', m] as const) },
  {
    weight: 2,
    arbitrary: fc
      .record({ jsonrpc: fc.constant('2.0'), id: jsonRpcId, method: fc.constantFrom('tools/list', 'ping', 'resources/list', 'prompts/list'), params: fc.option(hostileValue, { nil: undefined }) })
      .map((m) => ['known method', m] as const),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({
        jsonrpc: fc.constant('2.0'),
        id: jsonRpcId,
        method: fc.oneof(fc.constantFrom('tasks/get', 'completion/complete', 'logging/setLevel', 'tools/call/x', '', 'rpc.discover'), fc.string({ maxLength: 20 })),
        params: fc.option(hostileValue, { nil: undefined }),
      })
      .map((m) => ['unknown method', m] as const),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({ jsonrpc: fc.oneof(fc.constant('1.0'), fc.constant(2), fc.constant(null)), id: hostileValue, method: hostileValue, params: hostileValue }, { requiredKeys: [] })
      .map((m) => ['wrong types', m] as const),
  },
  { weight: 1, arbitrary: fc.record({ jsonrpc: fc.constant('2.0'), method: fc.constantFrom('notifications/initialized', 'notifications/cancelled', 'notifications/x'), params: fc.option(hostileValue, { nil: undefined }) }).map((m) => ['notification', m] as const) },
  { weight: 1, arbitrary: fc.record({ jsonrpc: fc.constant('2.0'), id: jsonRpcId, result: hostileValue }).map((m) => ['stray response', m] as const) },
);

const GOOD_ACCEPT = 'application/json, text/event-stream';

const headerOverrides = fc.oneof(
  { weight: 8, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.record({ accept: fc.constantFrom(null, '*/*', 'application/json', 'text/event-stream', 'text/html', 'application/*') }) },
  { weight: 1, arbitrary: fc.record({ 'content-type': fc.constantFrom(null, 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-16', 'multipart/form-data') }) },
  { weight: 1, arbitrary: fc.record({ 'mcp-protocol-version': fc.constantFrom('1999-01-01', 'garbage', '', '2025-11-25'.repeat(50)) }) },
);

const sessionKind = fc.oneof(
  { weight: 12, arbitrary: fc.constant<FrameSession>('live') },
  { weight: 1, arbitrary: fc.constantFrom<FrameSession>('none', 'unknown', 'closed', 'malformed') },
);
const tokenKind = fc.oneof(
  { weight: 14, arbitrary: fc.constant<FrameToken>('valid') },
  { weight: 1, arbitrary: fc.constantFrom<FrameToken>('none', 'unknown', 'malformed', 'lowercase_scheme') },
);

const envelope = fc.record({ session: sessionKind, token: tokenKind, headers: headerOverrides });

/** One frame: a message, a batch, a broken body, a deep or oversized one, a GET or DELETE, or an id sent twice. */
export const frameArbitrary: fc.Arbitrary<FuzzFrame> = fc.oneof(
  { weight: 10, arbitrary: fc.tuple(envelope, message).map(([env, [kind, m]]): FuzzFrame => ({ ...env, kind, method: 'POST', body: JSON.stringify(m) })) },
  {
    // An initialize with no session, as a client starts: each one that is answered opens a session; each one the
    // SDK refuses must leave nothing behind.
    weight: 3,
    arbitrary: fc
      .tuple(envelope, fc.record({ jsonrpc: fc.constant('2.0'), id: jsonRpcId, method: fc.constant('initialize'), params: initializeParams }))
      .map(([env, m]): FuzzFrame => ({ ...env, session: 'none', kind: 'new session', method: 'POST', body: JSON.stringify(m) })),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(envelope, fc.array(message, { maxLength: 5 }), fc.boolean()).map(([env, messages, duplicateIds]): FuzzFrame => {
      const values = messages.map(([, m]) => m as Record<string, unknown>);
      const batch = duplicateIds ? values.map((m) => ('id' in m ? { ...m, id: 7 } : m)) : values;
      return { ...env, kind: duplicateIds ? 'batch, duplicate ids' : 'batch', method: 'POST', body: JSON.stringify(batch) };
    }),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(envelope, fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('', '{', '{"jsonrpc":"2.0","id":1,"method":', 'null', '[]', '"x"', '1e999', 'NaN', '{"a":1,"a":2}'))).map(
      ([env, body]): FuzzFrame => ({ ...env, kind: 'not JSON-RPC', method: 'POST', body }),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(envelope, fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 64 })).map(
      ([env, bytes]): FuzzFrame => ({ ...env, kind: 'invalid UTF-8', method: 'POST', body: [0x7b, 0xff, 0xfe, ...bytes] }),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(envelope, fc.integer({ min: 50, max: 30_000 }), fc.boolean(), fc.boolean()).map(([env, depth, array, inArguments]): FuzzFrame => {
      const deep = nested(depth, array);
      const body = inArguments
        ? `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"set_config","arguments":{"name":"fz.deep","value":"x","extra":${deep}}}}`
        : deep;
      return { ...env, kind: 'deep nesting', method: 'POST', body };
    }),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(envelope, fc.integer({ min: 1, max: 200_000 })).map(
      ([env, oversizeBy]): FuzzFrame => ({ ...env, kind: 'oversized body', method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"', oversizeBy }),
    ),
  },
  { weight: 1, arbitrary: envelope.map((env): FuzzFrame => ({ ...env, kind: 'GET stream', method: 'GET' })) },
  {
    weight: 1,
    arbitrary: envelope.map((env): FuzzFrame => ({ ...env, session: env.session === 'live' ? 'unknown' : env.session, kind: 'DELETE', method: 'DELETE' })),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(envelope, callParams, fc.integer({ min: 1, max: 1_000 })).map(
      ([env, params, id]): FuzzFrame => ({ ...env, kind: 'same id twice in flight', method: 'POST', twice: true, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }) }),
    ),
  },
);

/** Frame `index` of the run `seed`, on its own: any frame can be replayed without generating the ones before it. */
export function frameAt(seed: number, index: number): FuzzFrame {
  const frameSeed = (seed ^ Math.imul(index + 1, 0x9e3779b1)) | 0;
  return fc.sample(frameArbitrary, { seed: frameSeed, numRuns: 1 })[0]!;
}

export const DEFAULT_ACCEPT = GOOD_ACCEPT;
