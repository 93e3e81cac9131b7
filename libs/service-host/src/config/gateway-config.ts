import { isAbsolute, resolve } from 'node:path';
import { isScalar, type Node } from 'yaml';
import {
  DURATION_FORMS,
  MapReader,
  formatIssue,
  openYamlDocument,
  parseDuration,
  readBoolean,
  readEnum,
  readInteger,
  readList,
  readString,
  readStringList,
  type ContractIssue,
  type YamlContext,
} from '@oncegate/contracts';
import { isStoredEventType, STORED_EVENT_TYPES } from '@oncegate/domain';
import { isLoopbackAuthority, isLoopbackHost } from './loopback';
import { isPostgresUrl } from './store-url';

export const STORE_DRIVERS = ['sqlite', 'postgres'] as const;
export type StoreDriver = (typeof STORE_DRIVERS)[number];

/**
 * Where the journal (and the sealed blobs) live: SQLite files in the data folder, or a PostgreSQL server that
 * several processes share. The URL may hold a password: show it only through `redactedStoreUrl`.
 */
export type StoreConfig =
  | { readonly driver: 'sqlite'; readonly synchronous: 'FULL' | 'EXTRA' | 'NORMAL' }
  | { readonly driver: 'postgres'; readonly url: string };

export interface GatewayConfig {
  /** Where the configuration came from, for messages. */
  readonly source: string;
  readonly host: string;
  readonly port: number;
  /** MCP endpoint path. */
  readonly path: string;
  /**
   * Names requests may give in `Host` (`listen.allowed_hosts`); `null` means the loopback names, which is only
   * allowed when the gateway listens on loopback.
   */
  readonly allowedHosts: readonly string[] | null;
  /** Browser origins allowed besides the gateway's own (`listen.allowed_origins`). */
  readonly allowedOrigins: readonly string[];
  /**
   * MCP sessions held in memory (`listen.session_idle`, `listen.sessions_per_agent`): one idle longer than
   * `idleMs` is let go, and an agent over `perActor` lets go of its least recently used idle one. A session let
   * go is restored from the sessions journal on its next request.
   */
  readonly sessions: { readonly idleMs: number; readonly perActor: number };
  /**
   * The `retry` field of the priming event that starts every SSE response stream (`listen.sse_retry`): how long
   * a client that lost the stream waits before it reconnects with `Last-Event-ID`.
   */
  readonly sseRetryMs: number;
  /**
   * How long a message stored for SSE resumption is kept (`listen.resumption_retention`); older ones are deleted
   * at start and then periodically, and a resume past them replays nothing.
   */
  readonly resumptionRetentionMs: number;
  /**
   * Test only (`testing.unauthenticated_agent`): the agent (`agent:<name>`) an MCP request without an
   * `Authorization` header is served as, so a test suite that cannot send a token can drive a gateway. `null` (the default) means every
   * request needs a token. Refused unless the gateway listens on, and answers to, loopback only.
   */
  readonly unauthenticatedAgent: string | null;
  /**
   * Test only (`testing.hold_before_send`): how long a dispatcher of this process waits between the commit that
   * dispatches an execution inline and sending its attempt, so a fault test can stop the process in between. 0 (the
   * default) sends at once.
   */
  readonly holdBeforeSendMs: number;
  /**
   * Test only (`testing.fail_handling`): the named service's handlers throw while the file exists (a dependency
   * of theirs gone), so a fault test can see events parked, fix the fault by removing the file, and replay them.
   */
  readonly failHandling: { readonly service: string; readonly whileFileExists: string } | null;
  /** The one data folder: keys, vault, instance locks, SSE resumption; the event store and sealed blobs with SQLite. */
  readonly dataDir: string;
  readonly contractsFile: string;
  readonly store: StoreConfig;
  /** How long a tools/call waits for an outcome before it answers with a pending result. */
  readonly callWaitMs: number;
  /** Largest accepted MCP request body. */
  readonly maxRequestBytes: number;
  /**
   * The authorization policy, first matching rule wins: which actors may call which tools outright (`allow`),
   * only inside a run that holds a session grant (`run_grant`), or never (`deny`). No match denies.
   */
  readonly policy: readonly PolicyRule[];
  /** How long an approval request waits for a decision before it is denied (`approval_timeout`). */
  readonly approvalTimeoutMs: number;
  /** Start the bundled demo target beside the gateway. */
  readonly demoTarget: { readonly enabled: boolean; readonly port: number };
  /**
   * Development mode: print a token for `agent:dev` at start, and make the journal key pair with a development
   * master key in the data folder when none exists.
   */
  readonly devToken: boolean;
  /** How often the sealer signs the journal's new events; 0 disables sealing. */
  readonly sealEveryMs: number;
  /**
   * How long this process counts as alive after it last renewed its dispatchers' liveness leases (renewed every
   * third of it). Attempts of a process whose lease ran out are settled as lost by whichever gateway notices.
   */
  readonly instanceLeaseMs: number;
  /**
   * Attempts one dispatcher process has in flight at most (`dispatch_in_flight`); past it, a dispatcher takes no
   * new `ExecutionAuthorized` until one finishes, so instances of a consumer group share the load.
   */
  readonly dispatchInFlight: number;
  /** The most detailed log level written: `error`, `warn`, `log`, `debug` or `verbose`. */
  readonly logLevel: LogLevelName;
  /**
   * The operations listener of every process (`operations`): `/metrics`, `/healthz`, `/readyz` on an address of its
   * own, apart from the MCP endpoint; `null` (the default) starts none.
   */
  readonly operations: { readonly host: string; readonly port: number } | null;
  /**
   * Traces (`tracing`): every process exports its spans over OTLP/HTTP to `endpoint`; one trace per tool call across
   * the services, carried in the events' metadata. `null` (the default) records none.
   */
  readonly tracing: { readonly endpoint: string; readonly sampleRatio: number } | null;
  /** The organisation's Kafka bus (`kafka`): where the relay publishes every event, and where decisions arrive; `null` without one. */
  readonly kafka: KafkaConfig | null;
  /**
   * OAuth 2.1 (`oauth`): the gateway as a resource server that takes access tokens of the organisation's identity
   * provider beside its own agent tokens; `null` (the default) takes agent tokens only.
   */
  readonly oauth: OAuthConfig | null;
}

/** The `oauth` section: whose access tokens are taken, for which resource, and how their claims name principals. */
export interface OAuthConfig {
  /** The authorization server's issuer identifier; tokens must carry it as `iss`. */
  readonly issuer: string;
  /** This gateway's resource URL (RFC 8707): tokens must name it in `aud`. Usually the public URL of the MCP endpoint. */
  readonly resource: string;
  /** Where the issuer's signing keys are; `null`: from the issuer's metadata (`jwks_uri`). */
  readonly jwksUri: string | null;
  /** The claim whose value names the agent: a token with `<claim>: build-bot` acts as `agent:build-bot`. */
  readonly agentClaim: string;
  /** Scopes every MCP request's token must hold (also advertised as `scopes_supported`). */
  readonly scopes: readonly string[];
  /** Tokens whose `claim` holds `value` (equal, or in a list) act as `approver:<name claim>` on the approvals API and console. */
  readonly approver: { readonly claim: string; readonly value: string; readonly nameClaim: string } | null;
  /**
   * How long a key set read serves before it is read again (`keys_max_age`, default 10m): a key the provider dropped
   * is refused within it. At least 1s, the least time between two reads.
   */
  readonly keysMaxAgeMs: number;
  /**
   * How long past `keysMaxAgeMs` the keys last read keep serving while the key set cannot be read (`keys_stale_if_error`,
   * default 24h); after it, tokens are answered 503 until it can. 0 serves none past their age.
   */
  readonly keysStaleIfErrorMs: number;
}

/** One rule of `kafka.topics`: events of these types, or of streams of these categories, go to `topic`. */
export interface KafkaRoute {
  readonly topic: string;
  /** Event types; `null` when the rule names stream categories instead. */
  readonly eventTypes: readonly string[] | null;
  /** Stream categories (the part of a stream name before its first `-`); `null` when the rule names event types. */
  readonly streams: readonly string[] | null;
}

/** Decisions taken from the bus (`kafka.decisions`): approval decisions and review resolutions, answered on `replies`. */
export interface KafkaDecisionsConfig {
  readonly topic: string;
  readonly replies: string;
  /** The Kafka consumer group the relays share the decisions topic in. */
  readonly group: string;
}

export interface KafkaConfig {
  /** `host:port` of brokers to bootstrap from. */
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** CloudEvents `source` of every relayed event. */
  readonly source: string;
  /** First matching rule wins; an event no rule takes goes to `defaultTopic`. */
  readonly routes: readonly KafkaRoute[];
  readonly defaultTopic: string;
  /** How long the relay's claim on publishing lasts unless renewed: a standby relay takes over that long after a crash. */
  readonly leaseMs: number;
  readonly decisions: KafkaDecisionsConfig | null;
}

/** The services whose handlers `testing.fail_handling` can make fail: those that consume events. */
const HANDLING_SERVICES = ['authorization', 'dispatcher-http', 'dispatcher-ssh', 'result-delivery'] as const;

export const LOG_LEVELS = ['error', 'warn', 'log', 'debug', 'verbose'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** Every level up to and including `level`, most severe first. */
export function logLevelsUpTo(level: LogLevelName): LogLevelName[] {
  return LOG_LEVELS.slice(0, LOG_LEVELS.indexOf(level) + 1);
}

export type PolicyDecision = 'allow' | 'run_grant' | 'deny';

export interface PolicyRule {
  /** Tool names, or `*` for every tool. */
  readonly tools: readonly string[];
  /** `agent:<name>`, or `*` for any authenticated agent. */
  readonly actors: readonly string[];
  readonly decision: PolicyDecision;
  /** Where the rule was written (`authorization.rules[0]`), named in every verdict it gives. */
  readonly source: string;
  /** Position of its tool list in the configuration file, for errors about the tools it names. */
  readonly at?: { readonly line: number; readonly column: number };
}

export class GatewayConfigError extends Error {
  readonly kind = 'config_invalid' as const;
  constructor(readonly issues: readonly ContractIssue[]) {
    super(`invalid configuration:\n${issues.map(formatIssue).join('\n')}`);
    this.name = 'GatewayConfigError';
  }
}

export const DEFAULT_CONFIG: Omit<GatewayConfig, 'source'> = {
  host: '127.0.0.1',
  port: 8787,
  path: '/mcp',
  allowedHosts: null,
  allowedOrigins: [],
  sessions: { idleMs: 30 * 60_000, perActor: 100 },
  sseRetryMs: 2_000,
  resumptionRetentionMs: 60 * 60_000,
  unauthenticatedAgent: null,
  holdBeforeSendMs: 0,
  failHandling: null,
  dataDir: './.oncegate',
  contractsFile: 'examples/tools.yaml',
  store: { driver: 'sqlite', synchronous: 'FULL' },
  callWaitMs: 20_000,
  maxRequestBytes: 1024 * 1024,
  policy: [{ tools: ['*'], actors: ['*'], decision: 'allow', source: 'default policy (no authorization section)' }],
  approvalTimeoutMs: 15 * 60_000,
  demoTarget: { enabled: false, port: 8790 },
  devToken: false,
  sealEveryMs: 5_000,
  instanceLeaseMs: 15_000,
  dispatchInFlight: 256,
  logLevel: 'log',
  operations: null,
  tracing: null,
  kafka: null,
  oauth: null,
};

const FIELDS = [
  'listen',
  'data_dir',
  'contracts',
  'store',
  'call_wait',
  'max_request_bytes',
  'authorization',
  // No longer a section: named so that a file which still has it gets the vault's instructions.
  'credentials',
  'demo_target',
  'dev_token',
  'seal_every',
  'instance_lease',
  'dispatch_in_flight',
  'log_level',
  'kafka',
  'oauth',
  'operations',
  'tracing',
  'testing',
] as const;

function readDuration(ctx: YamlContext, node: Node, path: string): number | undefined {
  const text = readString(ctx, node, path, { coerce: true });
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined) ctx.report(node, path, `'${text}' is not a duration; write ${DURATION_FORMS}`);
  return ms;
}

function readBytes(ctx: YamlContext, node: Node, path: string): number | undefined {
  const text = readString(ctx, node, path, { coerce: true });
  const match = /^(\d+)\s*(B|KiB|MiB)?$/.exec(text ?? '');
  if (text === undefined) return undefined;
  if (match === null) {
    ctx.report(node, path, `'${text}' is not a size; write e.g. 65536, 512KiB or 4MiB`);
    return undefined;
  }
  const unit = match[2] === 'MiB' ? 1024 * 1024 : match[2] === 'KiB' ? 1024 : 1;
  return Number(match[1]) * unit;
}

const HOST_NAME = /^(\*\.)?([a-z0-9-]+\.)*[a-z0-9-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/i;

function readAllowedHosts(ctx: YamlContext, node: Node, path: string): string[] | undefined {
  const hosts = readStringList(ctx, node, path);
  for (const host of hosts ?? []) {
    if (!HOST_NAME.test(host)) ctx.report(node, path, `'${host}' is not a host name; write e.g. gateway.example.com, gateway.example.com:8443, *.example.com or [::1]`);
  }
  return hosts;
}

function readAllowedOrigins(ctx: YamlContext, node: Node, path: string): string[] | undefined {
  const origins = readStringList(ctx, node, path);
  for (const origin of origins ?? []) {
    let valid = false;
    try {
      const url = new URL(origin);
      valid = (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === origin.replace(/\/$/, '').toLowerCase();
    } catch {
      valid = false;
    }
    if (!valid) ctx.report(node, path, `'${origin}' is not an origin; write scheme://host[:port], e.g. https://console.example.com`);
  }
  return origins;
}

const ACTOR = /^agent:[a-z0-9][a-z0-9_.-]{0,63}$/;

function readActors(ctx: YamlContext, node: Node, path: string): string[] | undefined {
  const actors = readStringList(ctx, node, path);
  for (const actor of actors ?? []) {
    if (actor !== '*' && !ACTOR.test(actor)) ctx.report(node, path, `'${actor}' is not an actor; write agent:<name> or '*'`);
  }
  return actors;
}

const AGENT_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

/**
 * Why `testing.unauthenticated_agent` may not be on with these listen settings, or `undefined`. A request without
 * a token is served as that agent, so only this machine may reach the gateway: it must listen on loopback and
 * answer to loopback names only (a proxy in front of it would name another host), and no web origin may call it
 * (a page of that origin could call tools through the visitor's browser).
 */
export function unauthenticatedAgentProblem(config: Pick<GatewayConfig, 'host' | 'allowedHosts' | 'allowedOrigins'>): string | undefined {
  if (!isLoopbackHost(config.host)) {
    return `listen.host is ${config.host}, not a loopback address: requests without a token would be served to whoever reaches it`;
  }
  const exposed = (config.allowedHosts ?? []).filter((host) => !isLoopbackAuthority(host));
  if (exposed.length > 0) {
    return `listen.allowed_hosts names ${exposed.join(', ')}: a gateway reached by other names must not serve requests without a token`;
  }
  if (config.allowedOrigins.length > 0) {
    return `listen.allowed_origins is not empty: pages of ${config.allowedOrigins.join(', ')} could call tools through a browser without a token`;
  }
  return undefined;
}

function readUnauthenticatedAgent(ctx: YamlContext, node: Node, config: GatewayConfig): string | null {
  const path = 'testing.unauthenticated_agent';
  const name = readString(ctx, node, path, { nonEmpty: true });
  if (name === undefined) return null;
  if (!AGENT_NAME.test(name)) {
    ctx.report(node, path, `'${name}' is not an agent name; write e.g. conformance (requests without a token are then served as agent:conformance)`);
    return null;
  }
  const problem = unauthenticatedAgentProblem(config);
  if (problem !== undefined) {
    ctx.report(node, path, `test only, refused: ${problem}`);
    return null;
  }
  return `agent:${name}`;
}

/**
 * `authorization.rules` (a list, first match wins) followed by the `authorization.allow` shorthand (tool →
 * actors allowed outright). With neither, the policy is empty and every call is denied.
 */
function readPolicy(ctx: YamlContext, auth: MapReader): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const rulesNode = auth.optional('rules');
  for (const item of (rulesNode && readList(ctx, rulesNode, 'authorization.rules')) ?? []) {
    const rule = item.node && MapReader.of(ctx, item.node, item.path);
    if (!rule) continue;
    rule.rejectUnknown(['tools', 'actors', 'decision']);
    const toolsNode = rule.required('tools', ": a list of tool names or '*'");
    const actorsNode = rule.required('actors', ": a list of agent:<name> or '*'");
    const decisionNode = rule.required('decision', ': allow, run_grant or deny');
    const tools = toolsNode && readStringList(ctx, toolsNode, rule.fieldPath('tools'));
    const actors = actorsNode && readActors(ctx, actorsNode, rule.fieldPath('actors'));
    const decision = decisionNode && readEnum(ctx, decisionNode, rule.fieldPath('decision'), ['allow', 'run_grant', 'deny'] as const);
    if (tools && actors && decision) rules.push({ tools, actors, decision, source: item.path, at: ctx.positionOf(toolsNode!.range?.[0] ?? 0) });
  }
  const allowNode = auth.optional('allow');
  const allow = allowNode && MapReader.of(ctx, allowNode, 'authorization.allow');
  for (const tool of allow?.keys() ?? []) {
    const path = allow!.fieldPath(tool);
    const node = allow!.required(tool);
    const actors = node && readActors(ctx, node, path);
    if (actors) rules.push({ tools: [tool], actors, decision: 'allow', source: path, at: ctx.positionOf(node!.range?.[0] ?? 0) });
  }
  return rules;
}

function readOtlpEndpoint(ctx: YamlContext, node: Node, path: string): string | undefined {
  const text = readString(ctx, node, path, { nonEmpty: true });
  if (text === undefined) return undefined;
  if (!isHttpUrl(text)) {
    // The value is not repeated: a URL with a user and password would put the password in the message.
    ctx.report(node, path, 'not an http(s) URL without a user or password, e.g. http://otel-collector:4318');
    return undefined;
  }
  return text;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

function readRatio(ctx: YamlContext, node: Node, path: string): number | undefined {
  const value = isScalar(node) ? node.value : undefined;
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    ctx.report(node, path, 'must be a number from 0 to 1 (the share of new traces recorded)');
    return undefined;
  }
  return value;
}

/** Kafka's own rule for topic names. */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;
const BROKER = /^([a-z0-9-]+\.)*[a-z0-9-]+:\d{1,5}$|^\[[0-9a-f:.]+\]:\d{1,5}$/i;

function readTopic(ctx: YamlContext, node: Node, path: string): string | undefined {
  const topic = readString(ctx, node, path, { nonEmpty: true });
  if (topic === undefined) return undefined;
  if (!TOPIC_NAME.test(topic) || topic === '.' || topic === '..') {
    ctx.report(node, path, `'${topic}' is not a Kafka topic name; use 1 to 249 of a-z A-Z 0-9 . _ -`);
    return undefined;
  }
  return topic;
}

function readBrokers(ctx: YamlContext, node: Node, path: string): string[] | undefined {
  const brokers = readStringList(ctx, node, path);
  if (brokers === undefined) return undefined;
  if (brokers.length === 0) ctx.report(node, path, 'name at least one broker, e.g. [kafka-1.example.com:9092]');
  const bad = brokers.filter((broker) => !BROKER.test(broker));
  for (const broker of bad) ctx.report(node, path, `'${broker}' is not host:port, e.g. kafka-1.example.com:9092`);
  return bad.length === 0 && brokers.length > 0 ? brokers : undefined;
}

/** The categories of the streams the journal holds. */
function storedStreamCategories(): string[] {
  return [...new Set(STORED_EVENT_TYPES.map((entry) => entry.category))].sort();
}

/** `kafka.topics`: each rule names event types (`events`) or stream categories (`streams`), and a topic. */
function readRoutes(ctx: YamlContext, node: Node): KafkaRoute[] {
  const routes: KafkaRoute[] = [];
  for (const item of readList(ctx, node, 'kafka.topics') ?? []) {
    const rule = item.node && MapReader.of(ctx, item.node, item.path);
    if (!rule) continue;
    rule.rejectUnknown(['topic', 'events', 'streams']);
    const topicNode = rule.required('topic', ': the Kafka topic these events go to');
    const topic = topicNode && readTopic(ctx, topicNode, rule.fieldPath('topic'));
    const eventsNode = rule.optional('events');
    const streamsNode = rule.optional('streams');
    if ((eventsNode === undefined) === (streamsNode === undefined)) {
      ctx.report(item.node!, item.path, 'name either events (event types) or streams (stream categories), not both and not neither');
      continue;
    }
    const eventTypes = eventsNode && readStringList(ctx, eventsNode, rule.fieldPath('events'));
    for (const type of eventTypes ?? []) {
      if (!isStoredEventType(type)) ctx.report(eventsNode!, rule.fieldPath('events'), `'${type}' is not an event type of the journal (docs/events/ lists them)`);
    }
    const streams = streamsNode && readStringList(ctx, streamsNode, rule.fieldPath('streams'));
    const categories = storedStreamCategories();
    for (const category of streams ?? []) {
      if (!categories.includes(category)) ctx.report(streamsNode!, rule.fieldPath('streams'), `'${category}' is not a stream category; one of ${categories.join(', ')}`);
    }
    if (topic !== undefined && (eventTypes !== undefined || streams !== undefined)) {
      routes.push({ topic, eventTypes: eventTypes ?? null, streams: streams ?? null });
    }
  }
  return routes;
}

const KAFKA_DEFAULTS = { clientId: 'oncegate', source: 'oncegate', defaultTopic: 'oncegate.events', leaseMs: 10_000, group: 'oncegate-decisions' } as const;

/** The `kafka` section: the bus the relay publishes to and takes decisions from. */
function readKafka(ctx: YamlContext, kafka: MapReader, env: NodeJS.ProcessEnv): KafkaConfig | undefined {
  kafka.rejectUnknown(['brokers', 'client_id', 'source', 'topics', 'default_topic', 'lease', 'decisions']);
  // Without brokers in the file, ONCEGATE_KAFKA_BROKERS names them (applyEnvironment).
  const fromEnv = Boolean(env['ONCEGATE_KAFKA_BROKERS']);
  const brokersNode = fromEnv ? kafka.optional('brokers') : kafka.required('brokers', ': a list of host:port, e.g. [kafka-1.example.com:9092], or set ONCEGATE_KAFKA_BROKERS');
  const brokers = brokersNode ? readBrokers(ctx, brokersNode, 'kafka.brokers') : fromEnv ? [] : undefined;
  const clientIdNode = kafka.optional('client_id');
  const sourceNode = kafka.optional('source');
  const topicsNode = kafka.optional('topics');
  const defaultNode = kafka.optional('default_topic');
  const leaseNode = kafka.optional('lease');
  const lease = leaseNode && readDuration(ctx, leaseNode, 'kafka.lease');
  if (lease !== undefined && lease < 300) ctx.report(leaseNode!, 'kafka.lease', 'must be at least 300ms');
  const decisionsNode = kafka.optional('decisions');
  const decisionsMap = decisionsNode && MapReader.of(ctx, decisionsNode, 'kafka.decisions');
  let decisions: KafkaDecisionsConfig | null = null;
  if (decisionsMap) {
    decisionsMap.rejectUnknown(['topic', 'replies', 'group']);
    const topicNode = decisionsMap.required('topic', ': the topic decisions arrive on');
    const repliesNode = decisionsMap.required('replies', ': the topic outcomes of decisions go to');
    const groupNode = decisionsMap.optional('group');
    const topic = topicNode && readTopic(ctx, topicNode, 'kafka.decisions.topic');
    const replies = repliesNode && readTopic(ctx, repliesNode, 'kafka.decisions.replies');
    const group = (groupNode && readString(ctx, groupNode, 'kafka.decisions.group', { nonEmpty: true })) ?? KAFKA_DEFAULTS.group;
    if (topic !== undefined && replies !== undefined) decisions = { topic, replies, group };
  }
  // Every field is read (and every mistake reported) before the section is given up for a missing one.
  const clientId = (clientIdNode && readString(ctx, clientIdNode, 'kafka.client_id', { nonEmpty: true })) ?? KAFKA_DEFAULTS.clientId;
  const source = (sourceNode && readString(ctx, sourceNode, 'kafka.source', { nonEmpty: true })) ?? KAFKA_DEFAULTS.source;
  const routes = topicsNode ? readRoutes(ctx, topicsNode) : [];
  const defaultTopic = (defaultNode && readTopic(ctx, defaultNode, 'kafka.default_topic')) ?? KAFKA_DEFAULTS.defaultTopic;
  if (brokers === undefined) return undefined;
  return { brokers, clientId, source, routes, defaultTopic, leaseMs: lease !== undefined && lease >= 300 ? lease : KAFKA_DEFAULTS.leaseMs, decisions };
}

/** An absolute http(s) URL without a fragment; http only for a loopback host (a token's issuer and audience). */
function readHttpsUrl(ctx: YamlContext, node: Node, path: string, example: string): string | undefined {
  const text = readString(ctx, node, path, { nonEmpty: true });
  if (text === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash !== '') {
    ctx.report(node, path, `'${text}' is not an absolute URL; write e.g. ${example}`);
    return undefined;
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    ctx.report(node, path, `'${text}' must use https (http is taken for a loopback host only)`);
    return undefined;
  }
  return text;
}

const CLAIM_NAME = /^[A-Za-z_][A-Za-z0-9_:.\/-]{0,127}$/;

function readClaimName(ctx: YamlContext, node: Node, path: string): string | undefined {
  const claim = readString(ctx, node, path, { nonEmpty: true });
  if (claim !== undefined && !CLAIM_NAME.test(claim)) ctx.report(node, path, `'${claim}' is not a claim name; write e.g. sub, client_id or roles`);
  return claim !== undefined && CLAIM_NAME.test(claim) ? claim : undefined;
}

const OAUTH_DEFAULTS = { keysMaxAgeMs: 10 * 60_000, keysStaleIfErrorMs: 24 * 3_600_000 } as const;

/** The `oauth` section: an identity provider whose access tokens the gateway takes as a resource server. */
function readOAuth(ctx: YamlContext, oauth: MapReader): OAuthConfig | undefined {
  oauth.rejectUnknown(['issuer', 'resource', 'jwks_uri', 'agent_claim', 'scopes', 'approver', 'keys_max_age', 'keys_stale_if_error']);
  const issuerNode = oauth.required('issuer', ': the identity provider\'s issuer, e.g. https://idp.example.com/realms/agents');
  const resourceNode = oauth.required('resource', ": this gateway's public MCP URL, the tokens' audience, e.g. https://gateway.example.com/mcp");
  const jwksNode = oauth.optional('jwks_uri');
  const agentNode = oauth.optional('agent_claim');
  const scopesNode = oauth.optional('scopes');
  const approverNode = oauth.optional('approver');
  const issuer = issuerNode && readHttpsUrl(ctx, issuerNode, 'oauth.issuer', 'https://idp.example.com/realms/agents');
  const resource = resourceNode && readHttpsUrl(ctx, resourceNode, 'oauth.resource', 'https://gateway.example.com/mcp');
  const jwksUri = jwksNode && readHttpsUrl(ctx, jwksNode, 'oauth.jwks_uri', 'https://idp.example.com/jwks');
  const agentClaim = (agentNode && readClaimName(ctx, agentNode, 'oauth.agent_claim')) ?? 'sub';
  const scopes = (scopesNode && readStringList(ctx, scopesNode, 'oauth.scopes')) ?? [];
  for (const scope of scopes) {
    if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope)) ctx.report(scopesNode!, 'oauth.scopes', `'${scope}' is not a scope (RFC 6749: printable, no spaces or quotes)`);
  }
  let approver: OAuthConfig['approver'] = null;
  const approverMap = approverNode && MapReader.of(ctx, approverNode, 'oauth.approver');
  if (approverMap) {
    approverMap.rejectUnknown(['claim', 'value', 'name_claim']);
    const claimNode = approverMap.required('claim', ': the claim that marks an approver, e.g. roles');
    const valueNode = approverMap.required('value', ': the value it must hold, e.g. oncegate-approver');
    const nameNode = approverMap.optional('name_claim');
    const claim = claimNode && readClaimName(ctx, claimNode, 'oauth.approver.claim');
    const value = valueNode && readString(ctx, valueNode, 'oauth.approver.value', { nonEmpty: true, coerce: true });
    const nameClaim = (nameNode && readClaimName(ctx, nameNode, 'oauth.approver.name_claim')) ?? 'sub';
    if (claim !== undefined && value !== undefined) approver = { claim, value, nameClaim };
  }
  const maxAgeNode = oauth.optional('keys_max_age');
  const keysMaxAgeMs = maxAgeNode && readDuration(ctx, maxAgeNode, 'oauth.keys_max_age');
  if (keysMaxAgeMs !== undefined && keysMaxAgeMs < 1_000) ctx.report(maxAgeNode!, 'oauth.keys_max_age', 'must be at least 1s: the key set is read at most once a second');
  const staleNode = oauth.optional('keys_stale_if_error');
  const keysStaleIfErrorMs = staleNode && readDuration(ctx, staleNode, 'oauth.keys_stale_if_error');
  if (issuer === undefined || resource === undefined || (jwksNode !== undefined && jwksUri === undefined)) return undefined;
  return {
    issuer,
    resource,
    jwksUri: jwksUri ?? null,
    agentClaim,
    scopes,
    approver,
    keysMaxAgeMs: keysMaxAgeMs !== undefined && keysMaxAgeMs >= 1_000 ? keysMaxAgeMs : OAUTH_DEFAULTS.keysMaxAgeMs,
    keysStaleIfErrorMs: keysStaleIfErrorMs ?? OAUTH_DEFAULTS.keysStaleIfErrorMs,
  };
}

const STORE_URL_FORM = 'postgres://user@host:5432/database';

/** `store.url`: a PostgreSQL URL; a mistake is named without repeating the value, which may hold a password. */
function readStoreUrl(ctx: YamlContext, node: Node, path: string): string | undefined {
  const url = readString(ctx, node, path, { nonEmpty: true });
  if (url === undefined) return undefined;
  if (!isPostgresUrl(url)) {
    ctx.report(node, path, `not a PostgreSQL URL; write ${STORE_URL_FORM} (postgres:// or postgresql://)`);
    return undefined;
  }
  return url;
}

/**
 * The `store` section. `synchronous` belongs to SQLite and `url` to PostgreSQL; the URL may instead come from
 * `ONCEGATE_STORE_URL`, so the file need not hold a password.
 */
function readStore(ctx: YamlContext, store: MapReader, base: StoreConfig, env: NodeJS.ProcessEnv): StoreConfig | undefined {
  store.rejectUnknown(['driver', 'synchronous', 'url']);
  const driverNode = store.optional('driver');
  const driver = driverNode === undefined ? base.driver : readEnum(ctx, driverNode, 'store.driver', STORE_DRIVERS);
  const synchronousNode = store.optional('synchronous');
  const urlNode = store.optional('url');
  switch (driver) {
    case undefined:
      return undefined;
    case 'sqlite': {
      if (urlNode) ctx.report(urlNode, 'store.url', 'applies to store.driver postgres only; SQLite keeps the journal in the data folder');
      const level = synchronousNode && readEnum(ctx, synchronousNode, 'store.synchronous', ['FULL', 'EXTRA', 'NORMAL'] as const);
      return { driver, synchronous: level ?? (base.driver === 'sqlite' ? base.synchronous : 'FULL') };
    }
    case 'postgres': {
      if (synchronousNode) {
        ctx.report(synchronousNode, 'store.synchronous', "applies to store.driver sqlite only; PostgreSQL's durability is the server's (fsync, synchronous_commit)");
      }
      const url = urlNode && readStoreUrl(ctx, urlNode, 'store.url');
      if (urlNode === undefined && !env['ONCEGATE_STORE_URL']) {
        ctx.report(store.node, 'store.url', `required with store.driver postgres: write ${STORE_URL_FORM}, or set ONCEGATE_STORE_URL to keep the password out of the file`);
      }
      // Without a URL in the file, ONCEGATE_STORE_URL supplies it (applyEnvironment).
      return url === undefined && urlNode !== undefined ? undefined : { driver, url: url ?? '' };
    }
    default: {
      const never: never = driver;
      return never;
    }
  }
}

/**
 * Parses a configuration file (YAML); every problem is reported with file, line, path and reason. `env` is
 * consulted only for a field the environment may supply instead of the file (`ONCEGATE_STORE_URL`).
 */
export function parseGatewayConfig(text: string, file: string, base = DEFAULT_CONFIG, env: NodeJS.ProcessEnv = {}): GatewayConfig {
  const { ctx, root } = openYamlDocument(text, file);
  const config: { -readonly [K in keyof GatewayConfig]: GatewayConfig[K] } = { ...base, source: file };
  const map = root === undefined ? undefined : MapReader.of(ctx, root, '');
  if (map !== undefined) {
    map.rejectUnknown(FIELDS);
    const listenNode = map.optional('listen');
    const listen = listenNode && MapReader.of(ctx, listenNode, 'listen');
    if (listen) {
      listen.rejectUnknown([
        'host',
        'port',
        'path',
        'allowed_hosts',
        'allowed_origins',
        'session_idle',
        'sessions_per_agent',
        'sse_retry',
        'resumption_retention',
      ]);
      const host = listen.optional('host');
      const port = listen.optional('port');
      const path = listen.optional('path');
      const allowedHosts = listen.optional('allowed_hosts');
      const allowedOrigins = listen.optional('allowed_origins');
      if (allowedHosts) config.allowedHosts = readAllowedHosts(ctx, allowedHosts, 'listen.allowed_hosts') ?? config.allowedHosts;
      if (allowedOrigins) config.allowedOrigins = readAllowedOrigins(ctx, allowedOrigins, 'listen.allowed_origins') ?? config.allowedOrigins;
      if (host) config.host = readString(ctx, host, 'listen.host', { nonEmpty: true }) ?? config.host;
      if (port) config.port = readInteger(ctx, port, 'listen.port', 0, 65535) ?? config.port;
      if (path) {
        const value = readString(ctx, path, 'listen.path', { nonEmpty: true });
        if (value !== undefined && !value.startsWith('/')) ctx.report(path, 'listen.path', "must start with '/'");
        else if (value !== undefined) config.path = value;
      }
      const idle = listen.optional('session_idle');
      if (idle) {
        const ms = readDuration(ctx, idle, 'listen.session_idle');
        if (ms === 0) ctx.report(idle, 'listen.session_idle', 'must be longer than 0s');
        else if (ms !== undefined) config.sessions = { ...config.sessions, idleMs: ms };
      }
      const perAgent = listen.optional('sessions_per_agent');
      if (perAgent) {
        const count = readInteger(ctx, perAgent, 'listen.sessions_per_agent', 1, 100_000);
        if (count !== undefined) config.sessions = { ...config.sessions, perActor: count };
      }
      const retry = listen.optional('sse_retry');
      if (retry) {
        const ms = readDuration(ctx, retry, 'listen.sse_retry');
        if (ms !== undefined && ms < 100) ctx.report(retry, 'listen.sse_retry', 'must be at least 100ms: clients reconnect after it without backing off');
        else if (ms !== undefined) config.sseRetryMs = ms;
      }
      const retention = listen.optional('resumption_retention');
      if (retention) {
        const ms = readDuration(ctx, retention, 'listen.resumption_retention');
        if (ms !== undefined && ms < 1_000) ctx.report(retention, 'listen.resumption_retention', 'must be at least 1s: a client needs time to reconnect');
        else if (ms !== undefined) config.resumptionRetentionMs = ms;
      }
    }
    const dataDir = map.optional('data_dir');
    if (dataDir) config.dataDir = readString(ctx, dataDir, 'data_dir', { nonEmpty: true }) ?? config.dataDir;
    const contracts = map.optional('contracts');
    if (contracts) config.contractsFile = readString(ctx, contracts, 'contracts', { nonEmpty: true }) ?? config.contractsFile;
    const storeNode = map.optional('store');
    const store = storeNode && MapReader.of(ctx, storeNode, 'store');
    if (store) config.store = readStore(ctx, store, config.store, env) ?? config.store;
    const wait = map.optional('call_wait');
    if (wait) config.callWaitMs = readDuration(ctx, wait, 'call_wait') ?? config.callWaitMs;
    const maxBytes = map.optional('max_request_bytes');
    if (maxBytes) config.maxRequestBytes = readBytes(ctx, maxBytes, 'max_request_bytes') ?? config.maxRequestBytes;
    const authNode = map.optional('authorization');
    const auth = authNode && MapReader.of(ctx, authNode, 'authorization');
    if (auth) {
      auth.rejectUnknown(['rules', 'allow', 'approval_timeout']);
      config.policy = readPolicy(ctx, auth);
      const timeout = auth.optional('approval_timeout');
      if (timeout) {
        const ms = readDuration(ctx, timeout, 'authorization.approval_timeout');
        if (ms === 0) ctx.report(timeout, 'authorization.approval_timeout', 'must be longer than 0s');
        else if (ms !== undefined) config.approvalTimeoutMs = ms;
      }
    }
    map.forbid('credentials', 'credentials live in the vault now: oncegate vault set <ref> --kind bearer|basic|header|ssh_key|password --bind <host[:port][/path]> (see docs/gateway.md)');
    const demoNode = map.optional('demo_target');
    const demo = demoNode && MapReader.of(ctx, demoNode, 'demo_target');
    if (demo) {
      demo.rejectUnknown(['enabled', 'port']);
      const enabled = demo.optional('enabled');
      const port = demo.optional('port');
      config.demoTarget = {
        enabled: (enabled && readBoolean(ctx, enabled, 'demo_target.enabled')) ?? config.demoTarget.enabled,
        port: (port && readInteger(ctx, port, 'demo_target.port', 0, 65535)) ?? config.demoTarget.port,
      };
    }
    const sealEvery = map.optional('seal_every');
    if (sealEvery) config.sealEveryMs = readDuration(ctx, sealEvery, 'seal_every') ?? config.sealEveryMs;
    const lease = map.optional('instance_lease');
    if (lease) {
      const ms = readDuration(ctx, lease, 'instance_lease');
      if (ms !== undefined && ms < 300) ctx.report(lease, 'instance_lease', 'must be at least 300ms');
      else if (ms !== undefined) config.instanceLeaseMs = ms;
    }
    const inFlight = map.optional('dispatch_in_flight');
    if (inFlight) config.dispatchInFlight = readInteger(ctx, inFlight, 'dispatch_in_flight', 1, 100_000) ?? config.dispatchInFlight;
    const logLevel = map.optional('log_level');
    if (logLevel) config.logLevel = readEnum(ctx, logLevel, 'log_level', LOG_LEVELS) ?? config.logLevel;
    const operationsNode = map.optional('operations');
    const operations = operationsNode && MapReader.of(ctx, operationsNode, 'operations');
    if (operations) {
      operations.rejectUnknown(['host', 'port']);
      const host = operations.optional('host');
      const port = operations.optional('port');
      config.operations = {
        host: (host && readString(ctx, host, 'operations.host', { nonEmpty: true })) ?? '127.0.0.1',
        port: (port && readInteger(ctx, port, 'operations.port', 0, 65535)) ?? 9464,
      };
    }
    const tracingNode = map.optional('tracing');
    const tracing = tracingNode && MapReader.of(ctx, tracingNode, 'tracing');
    if (tracing) {
      tracing.rejectUnknown(['endpoint', 'sample_ratio']);
      const endpointNode = tracing.required('endpoint', ': the OTLP/HTTP endpoint spans are sent to, e.g. http://otel-collector:4318');
      const endpoint = endpointNode && readOtlpEndpoint(ctx, endpointNode, 'tracing.endpoint');
      const ratioNode = tracing.optional('sample_ratio');
      const ratio = ratioNode && readRatio(ctx, ratioNode, 'tracing.sample_ratio');
      if (endpoint !== undefined) config.tracing = { endpoint, sampleRatio: ratio ?? 1 };
    }
    const kafkaNode = map.optional('kafka');
    const kafka = kafkaNode && MapReader.of(ctx, kafkaNode, 'kafka');
    if (kafka) config.kafka = readKafka(ctx, kafka, env) ?? config.kafka;
    const oauthNode = map.optional('oauth');
    const oauth = oauthNode && MapReader.of(ctx, oauthNode, 'oauth');
    if (oauth) config.oauth = readOAuth(ctx, oauth) ?? config.oauth;
    const devToken = map.optional('dev_token');
    if (devToken) config.devToken = readBoolean(ctx, devToken, 'dev_token') ?? config.devToken;
    // Read last: whether it may be on depends on the listen section.
    const testingNode = map.optional('testing');
    const testing = testingNode && MapReader.of(ctx, testingNode, 'testing');
    if (testing) {
      testing.rejectUnknown(['unauthenticated_agent', 'hold_before_send', 'fail_handling']);
      const agent = testing.optional('unauthenticated_agent');
      if (agent) config.unauthenticatedAgent = readUnauthenticatedAgent(ctx, agent, config);
      const hold = testing.optional('hold_before_send');
      if (hold) config.holdBeforeSendMs = readDuration(ctx, hold, 'testing.hold_before_send') ?? 0;
      const failNode = testing.optional('fail_handling');
      const fail = failNode && MapReader.of(ctx, failNode, 'testing.fail_handling');
      if (fail) {
        fail.rejectUnknown(['service', 'while_file_exists']);
        const service = fail.optional('service');
        const file = fail.optional('while_file_exists');
        const name = service && readEnum(ctx, service, 'testing.fail_handling.service', HANDLING_SERVICES);
        const path = file && readString(ctx, file, 'testing.fail_handling.while_file_exists');
        if (service === undefined) ctx.report(failNode, 'testing.fail_handling.service', `required: one of ${HANDLING_SERVICES.join(', ')}`);
        if (file === undefined) ctx.report(failNode, 'testing.fail_handling.while_file_exists', 'required: the file whose presence is the fault');
        if (name && path) config.failHandling = { service: name, whileFileExists: path };
      }
    }
  }
  if (ctx.issues.length > 0) throw new GatewayConfigError(ctx.issues);
  return config;
}

const ENVIRONMENT = 'environment';

/** `ONCEGATE_*` variables override the file; each bad value is named. */
export function applyEnvironment(config: GatewayConfig, env: NodeJS.ProcessEnv): GatewayConfig {
  const issues: ContractIssue[] = [];
  const bad = (name: string, reason: string) =>
    issues.push({ file: ENVIRONMENT, path: name, line: 0, column: 0, reason });
  const next: { -readonly [K in keyof GatewayConfig]: GatewayConfig[K] } = { ...config };
  if (env['ONCEGATE_HOST']) {
    next.host = env['ONCEGATE_HOST'];
    const problem = next.unauthenticatedAgent === null ? undefined : unauthenticatedAgentProblem(next);
    if (problem !== undefined) bad('ONCEGATE_HOST', `testing.unauthenticated_agent (${config.source}) is test only, refused: ${problem}`);
  }
  if (env['ONCEGATE_PORT'] !== undefined && env['ONCEGATE_PORT'] !== '') {
    const port = Number(env['ONCEGATE_PORT']);
    if (!Number.isInteger(port) || port < 0 || port > 65535) bad('ONCEGATE_PORT', `'${env['ONCEGATE_PORT']}' is not a port`);
    else next.port = port;
  }
  if (env['ONCEGATE_PATH']) {
    if (!env['ONCEGATE_PATH'].startsWith('/')) bad('ONCEGATE_PATH', "must start with '/'");
    else next.path = env['ONCEGATE_PATH'];
  }
  if (env['ONCEGATE_DATA_DIR']) next.dataDir = env['ONCEGATE_DATA_DIR'];
  if (env['ONCEGATE_CONTRACTS']) next.contractsFile = env['ONCEGATE_CONTRACTS'];
  if (env['ONCEGATE_SYNCHRONOUS']) {
    const level = env['ONCEGATE_SYNCHRONOUS'];
    if (level !== 'FULL' && level !== 'EXTRA' && level !== 'NORMAL') bad('ONCEGATE_SYNCHRONOUS', 'expected FULL, EXTRA or NORMAL');
    else if (next.store.driver !== 'sqlite') bad('ONCEGATE_SYNCHRONOUS', `applies to store.driver sqlite only; ${config.source} sets ${next.store.driver}`);
    else next.store = { driver: 'sqlite', synchronous: level };
  }
  if (env['ONCEGATE_STORE_URL']) {
    // The value is never repeated in a message: it may hold a password.
    if (next.store.driver !== 'postgres') bad('ONCEGATE_STORE_URL', `applies to store.driver postgres only; ${config.source} sets ${next.store.driver}`);
    else if (!isPostgresUrl(env['ONCEGATE_STORE_URL'])) bad('ONCEGATE_STORE_URL', `not a PostgreSQL URL; write ${STORE_URL_FORM} (postgres:// or postgresql://)`);
    else next.store = { driver: 'postgres', url: env['ONCEGATE_STORE_URL'] };
  }
  if (env['ONCEGATE_LOG_LEVEL']) {
    const level = env['ONCEGATE_LOG_LEVEL'] as LogLevelName;
    if (!LOG_LEVELS.includes(level)) bad('ONCEGATE_LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}`);
    else next.logLevel = level;
  }
  if (env['ONCEGATE_CALL_WAIT']) {
    const ms = parseDuration(env['ONCEGATE_CALL_WAIT']);
    if (ms === undefined) bad('ONCEGATE_CALL_WAIT', `not a duration; write ${DURATION_FORMS}`);
    else next.callWaitMs = ms;
  }
  if (env['ONCEGATE_DEMO_TARGET']) {
    const value = env['ONCEGATE_DEMO_TARGET'];
    if (!['on', 'off', '1', '0', 'true', 'false'].includes(value)) bad('ONCEGATE_DEMO_TARGET', 'expected on or off');
    else next.demoTarget = { ...next.demoTarget, enabled: ['on', '1', 'true'].includes(value) };
  }
  if (env['ONCEGATE_OPS_PORT'] !== undefined && env['ONCEGATE_OPS_PORT'] !== '') {
    const port = Number(env['ONCEGATE_OPS_PORT']);
    if (!Number.isInteger(port) || port < 0 || port > 65535) bad('ONCEGATE_OPS_PORT', `'${env['ONCEGATE_OPS_PORT']}' is not a port`);
    else next.operations = { host: next.operations?.host ?? '127.0.0.1', port };
  }
  if (env['ONCEGATE_OTLP_ENDPOINT']) {
    if (!isHttpUrl(env['ONCEGATE_OTLP_ENDPOINT'])) bad('ONCEGATE_OTLP_ENDPOINT', 'not an http(s) URL without a user or password, e.g. http://otel-collector:4318');
    else next.tracing = { endpoint: env['ONCEGATE_OTLP_ENDPOINT'], sampleRatio: next.tracing?.sampleRatio ?? 1 };
  }
  if (env['ONCEGATE_KAFKA_BROKERS']) {
    const brokers = env['ONCEGATE_KAFKA_BROKERS'].split(',').map((broker) => broker.trim());
    if (brokers.some((broker) => !BROKER.test(broker))) bad('ONCEGATE_KAFKA_BROKERS', 'expected host:port[,host:port…]');
    else next.kafka = { ...(next.kafka ?? { clientId: KAFKA_DEFAULTS.clientId, source: KAFKA_DEFAULTS.source, routes: [], defaultTopic: KAFKA_DEFAULTS.defaultTopic, leaseMs: KAFKA_DEFAULTS.leaseMs, decisions: null }), brokers };
  }
  if (next.store.driver === 'postgres' && next.store.url === '') {
    bad('ONCEGATE_STORE_URL', `store.driver postgres (${config.source}) needs a URL: write store.url, or set ONCEGATE_STORE_URL`);
  }
  if (issues.length > 0) throw new GatewayConfigError(issues);
  return next;
}

/** Relative paths in a configuration are relative to the working directory the gateway starts in. */
export function absolutePaths(config: GatewayConfig, cwd: string): GatewayConfig {
  const abs = (path: string) => (isAbsolute(path) ? path : resolve(cwd, path));
  return { ...config, dataDir: abs(config.dataDir), contractsFile: abs(config.contractsFile) };
}
