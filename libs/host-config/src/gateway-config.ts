import { isAbsolute, resolve } from 'node:path';
import {
  childPath,
  DURATION_FORMS,
  CREDENTIAL_REF_RULE,
  formatIssue,
  isCredentialRef,
  openYamlDocument,
  parseDuration,
  SchemaCheckedYaml,
  type ContractIssue,
  type SchemaMessages,
  type Segment,
  type YamlContext,
} from '@oncegate/contracts';
import { isStoredEventType, STORED_EVENT_TYPES } from '@oncegate/domain';
// The published schema of the file (generated from oncegate-file.ts by tools/config-schemas), compiled ahead of time beside
// it so that no process compiles it when it starts; the checks below are what it cannot say. It is published at the
// repository root (schemas/), where editors and users find it, and bundled from there.
// eslint-disable-next-line @nx/enforce-module-boundaries -- the one copy of the schema, outside every project
import { validate as validateOncegateFile } from '../../../schemas/oncegate.validate.mjs';
import {
  applyKafkaSecurityEnvironment,
  caFileProblem,
  clientCertificateProblems,
  environmentNamesKafkaPassword,
  environmentSetsKafkaTls,
  passwordFileProblem,
  SASL_NEEDS_TLS,
} from './kafka-security';
import { channelNameProblem, channelOptionsEntry, type ChannelOptionsEntry } from './channel-options';
import { isLoopbackAuthority, isLoopbackHost } from './loopback';
import type { BuiltInChannel, FailHandlingSection, KafkaDecisionsSection, KafkaDelivery, KafkaTopicRule, OAuthApproverSection, OncegateFile, PolicyRuleEntry } from './oncegate-file';
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
  /**
   * The built-in channels the embedded gateway (`oncegate start`, `oncegate stdio`) dispatches on in its own process
   * (`dispatch_channels`); a channel left out is left to its own service beside it.
   */
  readonly dispatchChannels: readonly BuiltInChannel[];
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
  /**
   * Each plugin channel's options (`channels.<name>`) as written, and where: only a process hosting the channel knows
   * what they may hold (the schema the channel publishes), so it checks its own entry when its dispatcher opens and
   * leaves the others alone. Empty without the section.
   */
  readonly channels: Readonly<Record<string, ChannelOptionsEntry>>;
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
  /**
   * Every decision must be signed by a live key of the approver it names (`require_signature`); when false or absent,
   * only a signature present is checked.
   */
  readonly requireSignature?: boolean;
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
  /** `exactly_once`: each batch and the relay's checkpoint in one Kafka transaction; `at_least_once`: duplicates after a crash. */
  readonly delivery: KafkaDelivery;
  /** The transactional id every relay of this journal shares (exactly once); also the group its checkpoint is committed in. */
  readonly transactionalId: string;
  /** The one-partition topic under whose offsets the checkpoint is committed (exactly once). */
  readonly checkpointTopic: string;
  /** TLS to the brokers (`kafka.tls`); absent: PLAINTEXT. */
  readonly tls?: KafkaTlsConfig;
  /** SASL to the brokers (`kafka.sasl`), over TLS only; absent: none. */
  readonly sasl?: KafkaSaslConfig;
}

/** TLS to the brokers: whom to trust, the client certificate for brokers that require one, the name to expect. */
export interface KafkaTlsConfig {
  /** A PEM file of the CAs the brokers' certificates must chain to; `null`: the CAs Node trusts. */
  readonly caFile: string | null;
  /** The client certificate (PEM), with `keyFile`; `null` for none. */
  readonly certFile: string | null;
  /** The client certificate's private key (PEM, unencrypted), read from this file only. */
  readonly keyFile: string | null;
  /** The name the brokers' certificates must carry; `null`: the host each broker is reached by. */
  readonly serverName: string | null;
}

export type KafkaSaslMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';

/** Where a secret is kept: a credential of the vault by name, or a file. Never the secret itself. */
export type SecretSource = { readonly from: 'vault'; readonly ref: string } | { readonly from: 'file'; readonly path: string };

export interface KafkaSaslConfig {
  readonly mechanism: KafkaSaslMechanism;
  readonly username: string;
  /** A `password` credential of the vault (sent only to the brokers it is bound to), or a file read at each connection. */
  readonly password: SecretSource;
}

/** The services whose handlers `testing.fail_handling` can make fail: those that consume events. */
const HANDLING_SERVICES: readonly FailHandlingSection['service'][] = ['authorization', 'dispatcher-http', 'dispatcher-ssh', 'result-delivery'];

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
  dispatchChannels: ['http', 'ssh', 'mcp'],
  logLevel: 'log',
  operations: null,
  tracing: null,
  kafka: null,
  oauth: null,
  channels: {},
};

const HANDLING_SERVICES_NOTE = HANDLING_SERVICES.join(', ');

/** What a missing required field should hold, by its shape. */
const REQUIRED_HINTS: Readonly<Record<string, string>> = {
  'authorization.rules[].tools': ": a list of tool names or '*'",
  'authorization.rules[].actors': ": a list of agent:<name> or '*'",
  'authorization.rules[].decision': ': allow, run_grant or deny',
  'tracing.endpoint': ': the OTLP/HTTP endpoint spans are sent to, e.g. http://otel-collector:4318',
  'kafka.topics[].topic': ': the Kafka topic these events go to',
  'kafka.decisions.topic': ': the topic decisions arrive on',
  'kafka.decisions.replies': ': the topic outcomes of decisions go to',
  'oauth.issuer': ": the identity provider's issuer, e.g. https://idp.example.com/realms/agents",
  'oauth.resource': ": this gateway's public MCP URL, the tokens' audience, e.g. https://gateway.example.com/mcp",
  'oauth.approver.claim': ': the claim that marks an approver, e.g. roles',
  'oauth.approver.value': ': the value it must hold, e.g. oncegate-approver',
};

const MESSAGES: SchemaMessages = {
  unknownField: (shape, name) => {
    if (shape === '' && name === 'credentials') {
      return 'credentials live in the vault now: oncegate vault set <ref> --kind bearer|basic|header|ssh_key|password --bind <host[:port][/path]> (see docs/gateway.md)';
    }
    // Secrets are never written in the file; the value is not repeated.
    if (shape === 'kafka.sasl' && name === 'password') {
      return 'a password is never written in this file: name a vault credential (credential_ref: <ref>, oncegate vault set <ref> --kind password --bind <broker host:port>) or a file (password_file: <path>)';
    }
    if (shape === 'kafka.tls' && name === 'key') return 'a private key is never written in this file: name the file that holds it (key_file: <path>)';
    return undefined;
  },
  requiredField: (shape, name) => {
    if (shape === 'testing.fail_handling') return name === 'service' ? `required: one of ${HANDLING_SERVICES_NOTE}` : 'required: the file whose presence is the fault';
    return `missing required field '${name}'${REQUIRED_HINTS[`${shape}.${name}`] ?? ''}`;
  },
  listItemPaths: 'list',
};

/** The file's fields where the schema found them valid, and where to report what it cannot check. */
class ConfigReader {
  constructor(readonly checked: SchemaCheckedYaml<OncegateFile>) {}

  get ctx(): YamlContext {
    return this.checked.ctx;
  }

  /** Whether a field is written, whatever its value. */
  has(...segments: Segment[]): boolean {
    let current: unknown = this.checked.value;
    for (const segment of segments) {
      if (typeof current !== 'object' || current === null || !Object.hasOwn(current, segment)) return false;
      current = (current as Record<string, unknown>)[String(segment)];
    }
    return true;
  }

  valid<V>(...segments: Segment[]): V | undefined {
    return this.checked.valid<V>(segments);
  }

  /** Whether a top-level section is written as a mapping (anything else the schema reported). */
  section(name: keyof OncegateFile): boolean {
    const value = this.checked.value[name];
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  }

  report(segments: Segment[], reason: string, path = this.checked.where(segments).path): void {
    this.ctx.report(this.checked.where(segments).node, path, reason);
  }

  position(segments: Segment[]): { line: number; column: number } {
    return this.ctx.positionOf(this.checked.where(segments).node.range?.[0] ?? 0);
  }

  /** A duration in milliseconds, with its least value (`0` for longer than 0s), or `undefined` (reported when invalid). */
  duration(segments: Segment[], least?: { ms: number; reason: string }): number | undefined {
    const value = this.valid<string | number>(...segments);
    if (value === undefined) return undefined;
    const ms = parseDuration(value);
    if (ms === undefined) {
      // Only a duration too long to count in milliseconds passes the schema and fails here.
      this.report(segments, `'${value}' is not a duration; write ${DURATION_FORMS}`);
      return undefined;
    }
    if (least !== undefined && (least.ms === 0 ? ms === 0 : ms < least.ms)) {
      this.report(segments, least.reason);
      return undefined;
    }
    return ms;
  }
}

const LONGER_THAN_ZERO = { ms: 0, reason: 'must be longer than 0s' };
const AT_LEAST_300MS = { ms: 300, reason: 'must be at least 300ms' };

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

/** A browser origin as it is sent in `Origin`: scheme, host and port, nothing else. */
function isOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === origin.replace(/\/$/, '').toLowerCase();
  } catch {
    return false;
  }
}

function readListen(file: ConfigReader, config: MutableConfig): void {
  config.host = file.valid<string>('listen', 'host') ?? config.host;
  config.port = file.valid<number>('listen', 'port') ?? config.port;
  config.path = file.valid<string>('listen', 'path') ?? config.path;
  config.allowedHosts = file.valid<string[]>('listen', 'allowed_hosts') ?? config.allowedHosts;
  const origins = file.valid<string[]>('listen', 'allowed_origins');
  const badOrigins = (origins ?? []).filter((origin) => !isOrigin(origin));
  for (const origin of badOrigins) file.report(['listen', 'allowed_origins'], `'${origin}' is not an origin; write scheme://host[:port], e.g. https://console.example.com`);
  if (origins !== undefined && badOrigins.length === 0) config.allowedOrigins = origins;
  const idleMs = file.duration(['listen', 'session_idle'], LONGER_THAN_ZERO);
  const perActor = file.valid<number>('listen', 'sessions_per_agent');
  config.sessions = { idleMs: idleMs ?? config.sessions.idleMs, perActor: perActor ?? config.sessions.perActor };
  config.sseRetryMs = file.duration(['listen', 'sse_retry'], { ms: 100, reason: 'must be at least 100ms: clients reconnect after it without backing off' }) ?? config.sseRetryMs;
  config.resumptionRetentionMs =
    file.duration(['listen', 'resumption_retention'], { ms: 1_000, reason: 'must be at least 1s: a client needs time to reconnect' }) ?? config.resumptionRetentionMs;
}

/**
 * `authorization.rules` (a list, first match wins) followed by the `authorization.allow` shorthand (tool →
 * actors allowed outright). With neither, the policy is empty and every call is denied.
 */
function readPolicy(file: ConfigReader): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const written = file.checked.value.authorization?.rules;
  (Array.isArray(written) ? written : []).forEach((_, index) => {
    const rule = file.valid<PolicyRuleEntry>('authorization', 'rules', index);
    if (rule === undefined) return;
    const at = ['authorization', 'rules', index];
    rules.push({ ...rule, source: childPath('authorization.rules', index), at: file.position([...at, 'tools']) });
  });
  for (const tool of Object.keys(file.valid<Record<string, string[]>>('authorization', 'allow') ?? {})) {
    const actors = file.valid<string[]>('authorization', 'allow', tool)!;
    rules.push({ tools: [tool], actors, decision: 'allow', source: childPath('authorization.allow', tool), at: file.position(['authorization', 'allow', tool]) });
  }
  return rules;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

/** Kafka's own rule for broker addresses, for ONCEGATE_KAFKA_BROKERS (the file's are checked by its schema). */
const BROKER = /^([a-z0-9-]+\.)*[a-z0-9-]+:\d{1,5}$|^\[[0-9a-f:.]+\]:\d{1,5}$/i;

/** The categories of the streams the journal holds. */
function storedStreamCategories(): string[] {
  return [...new Set(STORED_EVENT_TYPES.map((entry) => entry.category))].sort();
}

/** `kafka.topics`: each rule names event types (`events`) or stream categories (`streams`), and a topic. */
function readRoutes(file: ConfigReader): KafkaRoute[] {
  const routes: KafkaRoute[] = [];
  const written = file.checked.value.kafka?.topics;
  (Array.isArray(written) ? written : []).forEach((_, index) => {
    const at = ['kafka', 'topics', index];
    if (file.has(...at, 'events') === file.has(...at, 'streams')) {
      file.report(at, 'name either events (event types) or streams (stream categories), not both and not neither');
      return;
    }
    // The journal's catalog (libs/domain) is the one list of event types and stream categories.
    const events = file.valid<string[]>(...at, 'events');
    const unknownTypes = (events ?? []).filter((type) => !isStoredEventType(type));
    for (const type of unknownTypes) file.report([...at, 'events'], `'${type}' is not an event type of the journal (docs/events/ lists them)`);
    const streams = file.valid<string[]>(...at, 'streams');
    const categories = storedStreamCategories();
    const unknownCategories = (streams ?? []).filter((category) => !categories.includes(category));
    for (const category of unknownCategories) file.report([...at, 'streams'], `'${category}' is not a stream category; one of ${categories.join(', ')}`);
    const rule = file.valid<KafkaTopicRule>(...at);
    if (rule !== undefined && unknownTypes.length === 0 && unknownCategories.length === 0) routes.push({ topic: rule.topic, eventTypes: rule.events ?? null, streams: rule.streams ?? null });
  });
  return routes;
}

const KAFKA_DEFAULTS = {
  clientId: 'oncegate',
  source: 'oncegate',
  defaultTopic: 'oncegate.events',
  leaseMs: 10_000,
  group: 'oncegate-decisions',
  delivery: 'exactly_once',
  checkpointTopic: 'oncegate.relay-checkpoints',
} as const;

/** The transactional id of a journal's relays unless `kafka.transactional_id` names one: one per `kafka.source`. */
const defaultTransactionalId = (source: string) => `oncegate-relay:${source}`;

/** The `kafka` section: the bus the relay publishes to and takes decisions from. */
function readKafka(file: ConfigReader, env: NodeJS.ProcessEnv): KafkaConfig | undefined {
  // Without brokers in the file, ONCEGATE_KAFKA_BROKERS names them (applyEnvironment).
  const fromEnv = Boolean(env['ONCEGATE_KAFKA_BROKERS']);
  if (!fromEnv && !file.has('kafka', 'brokers')) {
    file.report(['kafka'], "missing required field 'brokers': a list of host:port, e.g. [kafka-1.example.com:9092], or set ONCEGATE_KAFKA_BROKERS", 'kafka.brokers');
  }
  const brokers = file.valid<string[]>('kafka', 'brokers') ?? (fromEnv ? [] : undefined);
  const lease = file.duration(['kafka', 'lease'], AT_LEAST_300MS);
  const decisions = file.valid<KafkaDecisionsSection>('kafka', 'decisions');
  const routes = readRoutes(file);
  const source = file.valid<string>('kafka', 'source') ?? KAFKA_DEFAULTS.source;
  const tls = readKafkaTls(file);
  const sasl = readKafkaSasl(file, env);
  if (brokers === undefined) return undefined;
  return {
    brokers,
    clientId: file.valid<string>('kafka', 'client_id') ?? KAFKA_DEFAULTS.clientId,
    source,
    routes,
    defaultTopic: file.valid<string>('kafka', 'default_topic') ?? KAFKA_DEFAULTS.defaultTopic,
    leaseMs: lease ?? KAFKA_DEFAULTS.leaseMs,
    decisions:
      decisions === undefined
        ? null
        : { topic: decisions.topic, replies: decisions.replies, group: decisions.group ?? KAFKA_DEFAULTS.group, requireSignature: decisions.require_signature ?? false },
    delivery: file.valid<KafkaDelivery>('kafka', 'delivery') ?? KAFKA_DEFAULTS.delivery,
    transactionalId: file.valid<string>('kafka', 'transactional_id') ?? defaultTransactionalId(source),
    checkpointTopic: file.valid<string>('kafka', 'checkpoint_topic') ?? KAFKA_DEFAULTS.checkpointTopic,
    ...(tls === undefined ? {} : { tls }),
    ...(sasl === undefined ? {} : { sasl }),
  };
}

/** `kafka.tls`: each file readable and what it should be (relative paths from the working directory). */
function readKafkaTls(file: ConfigReader): KafkaTlsConfig | undefined {
  if (!file.has('kafka', 'tls')) return undefined;
  const at = (field: string) => ['kafka', 'tls', field];
  const path = (field: string) => file.valid<string>(...at(field)) ?? null;
  const tls: KafkaTlsConfig = { caFile: path('ca_file'), certFile: path('cert_file'), keyFile: path('key_file'), serverName: path('server_name') };
  if (tls.caFile !== null) {
    const problem = caFileProblem(tls.caFile);
    if (problem !== undefined) file.report(at('ca_file'), problem);
  }
  if (tls.certFile !== null && tls.keyFile === null) file.report(at('cert_file'), 'a client certificate needs its private key: add key_file');
  if (tls.keyFile !== null && tls.certFile === null) file.report(at('key_file'), 'a client key needs its certificate: add cert_file');
  if (tls.certFile !== null && tls.keyFile !== null) {
    const problems = clientCertificateProblems(tls.certFile, tls.keyFile);
    if (problems.cert !== undefined) file.report(at('cert_file'), problems.cert);
    if (problems.key !== undefined) file.report(at('key_file'), problems.key);
  }
  return tls;
}

/**
 * `kafka.sasl`: a mechanism, a user, and where the password is, over TLS only. The password may instead be named by
 * `ONCEGATE_KAFKA_SASL_CREDENTIAL_REF` or `ONCEGATE_KAFKA_SASL_PASSWORD_FILE` (applyEnvironment), and TLS turned on
 * by `ONCEGATE_KAFKA_TLS*`.
 */
function readKafkaSasl(file: ConfigReader, env: NodeJS.ProcessEnv): KafkaSaslConfig | undefined {
  if (!file.has('kafka', 'sasl')) return undefined;
  const at = (field: string) => ['kafka', 'sasl', field];
  const mechanism = file.valid<KafkaSaslMechanism>(...at('mechanism'));
  const username = file.valid<string>(...at('username'));
  const ref = file.valid<string>(...at('credential_ref'));
  const passwordFile = file.valid<string>(...at('password_file'));
  if (!file.has('kafka', 'tls') && !environmentSetsKafkaTls(env)) file.report(['kafka', 'sasl'], SASL_NEEDS_TLS);
  if (file.has(...at('credential_ref')) && file.has(...at('password_file'))) {
    file.report(['kafka', 'sasl'], 'name either credential_ref (a vault credential) or password_file, not both');
  } else if (!file.has(...at('credential_ref')) && !file.has(...at('password_file')) && !file.has(...at('password')) && !environmentNamesKafkaPassword(env)) {
    file.report(
      ['kafka', 'sasl'],
      'where is the password? credential_ref: <ref> (a password credential of the vault) or password_file: <path>, or ONCEGATE_KAFKA_SASL_CREDENTIAL_REF / ONCEGATE_KAFKA_SASL_PASSWORD_FILE',
      'kafka.sasl.credential_ref',
    );
  }
  // The reference is not repeated: a value that looks like a secret may be the password itself.
  if (ref !== undefined && !isCredentialRef(ref)) file.report(at('credential_ref'), CREDENTIAL_REF_RULE);
  if (passwordFile !== undefined) {
    const problem = passwordFileProblem(passwordFile);
    if (problem !== undefined) file.report(at('password_file'), problem);
  }
  if (mechanism === undefined || username === undefined) return undefined;
  // Without a password here, the environment names it (applyEnvironment).
  const password: SecretSource = ref !== undefined ? { from: 'vault', ref } : { from: 'file', path: passwordFile ?? '' };
  return { mechanism, username, password };
}

/** An absolute http(s) URL without a fragment; http only for a loopback host (a token's issuer and audience). */
function readHttpsUrl(file: ConfigReader, segments: Segment[], example: string): string | undefined {
  const text = file.valid<string>(...segments);
  if (text === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash !== '') {
    file.report(segments, `'${text}' is not an absolute URL; write e.g. ${example}`);
    return undefined;
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    file.report(segments, `'${text}' must use https (http is taken for a loopback host only)`);
    return undefined;
  }
  return text;
}

const OAUTH_DEFAULTS = { keysMaxAgeMs: 10 * 60_000, keysStaleIfErrorMs: 24 * 3_600_000 } as const;

/** The `oauth` section: an identity provider whose access tokens the gateway takes as a resource server. */
function readOAuth(file: ConfigReader): OAuthConfig | undefined {
  const issuer = readHttpsUrl(file, ['oauth', 'issuer'], 'https://idp.example.com/realms/agents');
  const resource = readHttpsUrl(file, ['oauth', 'resource'], 'https://gateway.example.com/mcp');
  const jwksUri = file.has('oauth', 'jwks_uri') ? readHttpsUrl(file, ['oauth', 'jwks_uri'], 'https://idp.example.com/jwks') : null;
  const approver = file.valid<OAuthApproverSection>('oauth', 'approver');
  const keysMaxAgeMs = file.duration(['oauth', 'keys_max_age'], { ms: 1_000, reason: 'must be at least 1s: the key set is read at most once a second' });
  const keysStaleIfErrorMs = file.duration(['oauth', 'keys_stale_if_error']);
  if (issuer === undefined || resource === undefined || jwksUri === undefined) return undefined;
  return {
    issuer,
    resource,
    jwksUri,
    agentClaim: file.valid<string>('oauth', 'agent_claim') ?? 'sub',
    scopes: file.valid<string[]>('oauth', 'scopes') ?? [],
    approver: approver === undefined ? null : { claim: approver.claim, value: String(approver.value), nameClaim: approver.name_claim ?? 'sub' },
    keysMaxAgeMs: keysMaxAgeMs ?? OAUTH_DEFAULTS.keysMaxAgeMs,
    keysStaleIfErrorMs: keysStaleIfErrorMs ?? OAUTH_DEFAULTS.keysStaleIfErrorMs,
  };
}

const STORE_URL_FORM = 'postgres://user@host:5432/database';

/**
 * The `store` section. `synchronous` belongs to SQLite and `url` to PostgreSQL; the URL may instead come from
 * `ONCEGATE_STORE_URL`, so the file need not hold a password. A mistake in the URL is named without repeating it.
 */
function readStore(file: ConfigReader, base: StoreConfig, env: NodeJS.ProcessEnv): StoreConfig | undefined {
  const driver = file.has('store', 'driver') ? file.valid<StoreDriver>('store', 'driver') : base.driver;
  switch (driver) {
    case undefined:
      return undefined;
    case 'sqlite': {
      if (file.has('store', 'url')) file.report(['store', 'url'], 'applies to store.driver postgres only; SQLite keeps the journal in the data folder');
      const level = file.valid<'FULL' | 'EXTRA' | 'NORMAL'>('store', 'synchronous');
      return { driver, synchronous: level ?? (base.driver === 'sqlite' ? base.synchronous : 'FULL') };
    }
    case 'postgres': {
      if (file.has('store', 'synchronous')) {
        file.report(['store', 'synchronous'], "applies to store.driver sqlite only; PostgreSQL's durability is the server's (fsync, synchronous_commit)");
      }
      const url = file.valid<string>('store', 'url');
      if (url !== undefined && !isPostgresUrl(url)) file.report(['store', 'url'], `not a PostgreSQL URL; write ${STORE_URL_FORM} (postgres:// or postgresql://)`);
      if (!file.has('store', 'url') && !env['ONCEGATE_STORE_URL']) {
        file.report(['store'], `required with store.driver postgres: write ${STORE_URL_FORM}, or set ONCEGATE_STORE_URL to keep the password out of the file`, 'store.url');
      }
      // Without a URL in the file, ONCEGATE_STORE_URL supplies it (applyEnvironment).
      return { driver, url: url ?? '' };
    }
    default: {
      const never: never = driver;
      return never;
    }
  }
}

/**
 * `channels`: each entry kept as written with its positions. What an entry may hold is its channel's to say (the
 * dispatcher kit checks it in the process hosting the channel); here only that it is a mapping under a channel name.
 */
function readChannels(file: ConfigReader): Record<string, ChannelOptionsEntry> {
  const channels: Record<string, ChannelOptionsEntry> = {};
  for (const name of Object.keys(file.checked.value.channels ?? {})) {
    const problem = channelNameProblem(name);
    if (problem !== undefined) {
      file.checked.reportKey(['channels', name], problem);
      continue;
    }
    const options = file.valid<Record<string, unknown>>('channels', name);
    if (options === undefined) continue;
    const { node } = file.checked.where(['channels', name]);
    channels[name] = channelOptionsEntry(file.ctx, node, file.checked.keyOf(['channels', name]), options);
  }
  return channels;
}

/** The test-only `testing` section; read last, since whether it may be on depends on the listen section. */
function readTesting(file: ConfigReader, config: MutableConfig): void {
  const name = file.valid<string>('testing', 'unauthenticated_agent');
  if (name !== undefined) {
    const problem = unauthenticatedAgentProblem(config);
    if (problem !== undefined) file.report(['testing', 'unauthenticated_agent'], `test only, refused: ${problem}`);
    else config.unauthenticatedAgent = `agent:${name}`;
  }
  config.holdBeforeSendMs = file.duration(['testing', 'hold_before_send']) ?? config.holdBeforeSendMs;
  const fail = file.valid<FailHandlingSection>('testing', 'fail_handling');
  if (fail !== undefined) config.failHandling = { service: fail.service, whileFileExists: fail.while_file_exists };
}

type MutableConfig = { -readonly [K in keyof GatewayConfig]: GatewayConfig[K] };

/**
 * Parses a configuration file (YAML): checked against schemas/oncegate.schema.json, then by the rules a schema
 * cannot express; every problem is reported with file, line, path and reason, misspelt fields first (they often
 * explain the rest). `env` is consulted only for a field the environment may supply instead of the file
 * (`ONCEGATE_STORE_URL`, `ONCEGATE_KAFKA_BROKERS`).
 */
export function parseGatewayConfig(text: string, file: string, base = DEFAULT_CONFIG, env: NodeJS.ProcessEnv = {}): GatewayConfig {
  const { ctx, root } = openYamlDocument(text, file);
  const config: MutableConfig = { ...base, source: file };
  const checked = root === undefined ? undefined : new SchemaCheckedYaml<OncegateFile>(ctx, root, validateOncegateFile, MESSAGES);
  if (checked !== undefined && typeof checked.value === 'object' && checked.value !== null && !Array.isArray(checked.value)) {
    const reader = new ConfigReader(checked);
    if (reader.section('listen')) readListen(reader, config);
    config.dataDir = reader.valid<string>('data_dir') ?? config.dataDir;
    config.contractsFile = reader.valid<string>('contracts') ?? config.contractsFile;
    if (reader.section('store')) config.store = readStore(reader, config.store, env) ?? config.store;
    config.callWaitMs = reader.duration(['call_wait']) ?? config.callWaitMs;
    const bytes = reader.valid<number | string>('max_request_bytes');
    if (bytes !== undefined) config.maxRequestBytes = byteCount(bytes);
    if (reader.section('authorization')) {
      config.policy = readPolicy(reader);
      config.approvalTimeoutMs = reader.duration(['authorization', 'approval_timeout'], LONGER_THAN_ZERO) ?? config.approvalTimeoutMs;
    }
    config.demoTarget = {
      enabled: reader.valid<boolean>('demo_target', 'enabled') ?? config.demoTarget.enabled,
      port: reader.valid<number>('demo_target', 'port') ?? config.demoTarget.port,
    };
    config.sealEveryMs = reader.duration(['seal_every']) ?? config.sealEveryMs;
    config.instanceLeaseMs = reader.duration(['instance_lease'], AT_LEAST_300MS) ?? config.instanceLeaseMs;
    config.dispatchInFlight = reader.valid<number>('dispatch_in_flight') ?? config.dispatchInFlight;
    const channels = reader.valid<BuiltInChannel[]>('dispatch_channels');
    const twice = channels?.find((channel, index) => channels.indexOf(channel) !== index);
    if (twice !== undefined) reader.report(['dispatch_channels'], `'${twice}' is named twice; name each channel once`);
    else config.dispatchChannels = channels ?? config.dispatchChannels;
    config.logLevel = reader.valid<LogLevelName>('log_level') ?? config.logLevel;
    if (reader.section('operations')) {
      config.operations = { host: reader.valid<string>('operations', 'host') ?? '127.0.0.1', port: reader.valid<number>('operations', 'port') ?? 9464 };
    }
    const endpoint = reader.valid<string>('tracing', 'endpoint');
    // The value is not repeated: a URL with a user and password would put the password in the message.
    if (endpoint !== undefined && !isHttpUrl(endpoint)) reader.report(['tracing', 'endpoint'], 'not an http(s) URL without a user or password, e.g. http://otel-collector:4318');
    else if (endpoint !== undefined) config.tracing = { endpoint, sampleRatio: reader.valid<number>('tracing', 'sample_ratio') ?? 1 };
    if (reader.section('kafka')) config.kafka = readKafka(reader, env) ?? config.kafka;
    if (reader.section('oauth')) config.oauth = readOAuth(reader) ?? config.oauth;
    if (reader.section('channels')) config.channels = readChannels(reader);
    config.devToken = reader.valid<boolean>('dev_token') ?? config.devToken;
    if (reader.section('testing')) readTesting(reader, config);
  }
  if (ctx.issues.length > 0) {
    const misspelt = new Set(checked?.unknownFields ?? []);
    throw new GatewayConfigError([...ctx.issues].sort((a, b) => Number(!misspelt.has(a)) - Number(!misspelt.has(b)) || a.line - b.line || a.column - b.column));
  }
  return config;
}

/** `max_request_bytes` in bytes: a number, or digits with B, KiB or MiB (the schema checked the form). */
function byteCount(written: number | string): number {
  if (typeof written === 'number') return written;
  const [, digits = '0', unit] = /^(\d+)\s*(B|KiB|MiB)?$/.exec(written) ?? [];
  return Number(digits) * (unit === 'MiB' ? 1024 * 1024 : unit === 'KiB' ? 1024 : 1);
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
    else next.kafka = {
      ...(next.kafka ?? {
        clientId: KAFKA_DEFAULTS.clientId,
        source: KAFKA_DEFAULTS.source,
        routes: [],
        defaultTopic: KAFKA_DEFAULTS.defaultTopic,
        leaseMs: KAFKA_DEFAULTS.leaseMs,
        decisions: null,
        delivery: KAFKA_DEFAULTS.delivery,
        transactionalId: defaultTransactionalId(KAFKA_DEFAULTS.source),
        checkpointTopic: KAFKA_DEFAULTS.checkpointTopic,
      }),
      brokers,
    };
  }
  next.kafka = applyKafkaSecurityEnvironment(next.kafka, env, bad, config.source);
  if (next.store.driver === 'postgres' && next.store.url === '') {
    bad('ONCEGATE_STORE_URL', `store.driver postgres (${config.source}) needs a URL: write store.url, or set ONCEGATE_STORE_URL`);
  }
  if (issues.length > 0) throw new GatewayConfigError(issues);
  return next;
}

/** Relative paths in a configuration are relative to the working directory the gateway starts in. */
export function absolutePaths(config: GatewayConfig, cwd: string): GatewayConfig {
  const abs = (path: string) => (isAbsolute(path) ? path : resolve(cwd, path));
  return { ...config, dataDir: abs(config.dataDir), contractsFile: abs(config.contractsFile), kafka: kafkaPaths(config.kafka, abs) };
}

/** The files of `kafka.tls` and `kafka.sasl` made absolute. */
function kafkaPaths(kafka: KafkaConfig | null, abs: (path: string) => string): KafkaConfig | null {
  if (kafka === null) return null;
  const optional = (path: string | null) => (path === null ? null : abs(path));
  const { tls, sasl } = kafka;
  return {
    ...kafka,
    ...(tls === undefined ? {} : { tls: { ...tls, caFile: optional(tls.caFile), certFile: optional(tls.certFile), keyFile: optional(tls.keyFile) } }),
    ...(sasl?.password.from === 'file' ? { sasl: { ...sasl, password: { from: 'file' as const, path: abs(sasl.password.path) } } } : {}),
  };
}
