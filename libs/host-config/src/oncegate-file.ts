import type { Duration, NonEmptyString } from '@oncegate/contracts';

/**
 * The gateway's configuration file (`oncegate.yaml`) as it is written: the source of schemas/oncegate.schema.json
 * (tools/config-schemas). `parseGatewayConfig` validates a file against that schema, then checks what a schema
 * cannot say (durations' least values, loopback rules, URLs, fields that belong to one store driver) and builds the
 * `GatewayConfig`. Every field is optional; `ONCEGATE_*` environment variables override the file.
 *
 * @title Oncegate configuration
 */
export interface OncegateFile {
  /** Where the MCP endpoint listens, and the names and origins it answers to. */
  listen?: ListenSection;
  /**
   * The one data folder: keys, vault, instance locks, SSE resumption; with SQLite also the journal and sealed results.
   * `ONCEGATE_DATA_DIR` overrides it.
   * @default "./.oncegate"
   */
  data_dir?: NonEmptyString;
  /**
   * The tool contract file (docs/contracts.md). `ONCEGATE_CONTRACTS` overrides it.
   * @default "examples/tools.yaml"
   */
  contracts?: NonEmptyString;
  /** Where the journal and the sealed arguments and results live. */
  store?: StoreSection;
  /**
   * How long a call waits before answering "still in progress" with its execution id. `ONCEGATE_CALL_WAIT` overrides it.
   * @default "20s"
   */
  call_wait?: Duration;
  /**
   * The largest MCP request body; larger requests get HTTP 413.
   * @default "1MiB"
   */
  max_request_bytes?: ByteSize;
  /** The authorization policy: which agents may call which tools. Without the section every agent may call every tool. */
  authorization?: AuthorizationSection;
  /**
   * Start the bundled demo target beside the gateway. `ONCEGATE_DEMO_TARGET` (`on`/`off`) overrides `enabled`.
   */
  demo_target?: DemoTargetSection;
  /**
   * Development mode: print a token for `agent:dev` at start, and make the journal key pair with a development
   * master key in the data folder when none exists.
   * @default false
   */
  dev_token?: boolean;
  /**
   * How often the journal's new events are sealed (signed); `0` disables sealing.
   * @default "5s"
   */
  seal_every?: Duration;
  /**
   * How long a process counts as alive after it last renewed its liveness lease (renewed every third of it); at
   * least 300ms.
   * @default "15s"
   */
  instance_lease?: Duration;
  /**
   * Attempts one dispatcher process has in flight at most; past it, the process takes no new work until one finishes.
   * @minimum 1
   * @maximum 100000
   * @asType integer
   * @default 256
   */
  dispatch_in_flight?: number;
  /**
   * The built-in channels `oncegate start` (and `oncegate stdio`) dispatches on in its own process. A channel left out is
   * dispatched by its own service beside it (`oncegate serve dispatcher-<channel>`, `dist/apps/dispatcher-mcp/main.js`);
   * until one runs, its calls wait in `authorized`.
   * @default ["http", "ssh", "mcp"]
   */
  dispatch_channels?: BuiltInChannel[];
  /**
   * The most detailed log level written. `ONCEGATE_LOG_LEVEL` overrides it.
   * @default "log"
   */
  log_level?: LogLevel;
  /** The organisation's Kafka bus: where the relay publishes every event, and where decisions arrive. */
  kafka?: KafkaSection;
  /**
   * OAuth 2.1: take access tokens of the organisation's identity provider beside the gateway's own agent tokens.
   */
  oauth?: OAuthSection;
  /** The operations listener of every process: `/metrics`, `/healthz` and `/readyz` on an address of its own. */
  operations?: OperationsSection;
  /** Traces: every process exports its spans over OTLP/HTTP, one trace per tool call across the services. */
  tracing?: TracingSection;
  /**
   * Each plugin channel's options, by channel name (`channels: { sql: { max_rows: 500 } }`): what applies to every tool
   * of the channel. A process hosting the channel checks its entry against the schema the channel publishes
   * (`oncegate channels schema <module>`) and refuses to start on a mistake; an entry for a channel the process does
   * not host is left to the process that does.
   */
  channels?: Record<string, ChannelOptionsSection>;
  /** Test only: settings that let test suites drive a gateway; warned about at start. */
  testing?: TestingSection;
}

/** A channel `oncegate start` can dispatch on in its own process. */
export type BuiltInChannel = 'http' | 'ssh' | 'mcp';

/** One channel's options: what they may hold is the channel's own schema (docs/dispatchers.md). */
export type ChannelOptionsSection = Record<string, unknown>;

/**
 * A TCP port; 0 picks a free one.
 * @minimum 0
 * @maximum 65535
 * @asType integer
 */
export type Port = number;

/**
 * A size in bytes: a number, or with a unit (`B`, `KiB`, `MiB`), e.g. `512KiB` or `4MiB`.
 * @errorMessage Not a size; write e.g. 65536, 512KiB or 4MiB
 */
export type ByteSize = ByteCount | ByteSizeText;

/**
 * @minimum 0
 * @asType integer
 */
export type ByteCount = number;

/**
 * A size as text: bytes, optionally with a unit (`B`, `KiB`, `MiB`).
 * @pattern ^\d+\s*(B|KiB|MiB)?$
 * @patternErrorMessage Not a size; write e.g. 65536, 512KiB or 4MiB
 */
export type ByteSizeText = string;

/**
 * A name requests may give in `Host`: `name`, `name:port`, `*.domain`, or an IP literal such as `[::1]`.
 * @pattern ^(\*\.)?([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+(:\d{1,5})?$|^\[[0-9a-fA-F:.]+\](:\d{1,5})?$
 * @patternErrorMessage Not a host name; write e.g. gateway.example.com, gateway.example.com:8443, *.example.com or [::1]
 */
export type AllowedHost = string;

/**
 * An MCP endpoint path.
 * @pattern ^/
 * @patternErrorMessage Must start with '/'
 */
export type EndpointPath = string;

/** Where the MCP endpoint listens, and the names and origins it answers to. */
export interface ListenSection {
  /**
   * The address to listen on. `ONCEGATE_HOST` overrides it.
   * @default "127.0.0.1"
   */
  host?: NonEmptyString;
  /**
   * The port. `ONCEGATE_PORT` overrides it.
   * @default 8787
   */
  port?: Port;
  /**
   * The MCP endpoint's path. `ONCEGATE_PATH` overrides it.
   * @default "/mcp"
   */
  path?: EndpointPath;
  /**
   * Names a request may give in `Host`; any other gets 403 (DNS-rebinding protection). Required when `host` is not a
   * loopback address; without it, the loopback names.
   */
  allowed_hosts?: AllowedHost[];
  /** Browser origins (`https://console.example.com`) allowed besides the gateway's own; any other `Origin` gets 403. */
  allowed_origins?: string[];
  /**
   * An MCP session with no request for this long is let go from memory (restored from the journal on its next request).
   * @default "30m"
   */
  session_idle?: Duration;
  /**
   * Sessions one agent keeps in memory; over it, its least recently used idle one is let go.
   * @minimum 1
   * @maximum 100000
   * @asType integer
   * @default 100
   */
  sessions_per_agent?: number;
  /**
   * The `retry` of the priming event of every SSE response stream: how long a client that lost the stream waits
   * before it resumes with `Last-Event-ID`. At least 100ms.
   * @default "2s"
   */
  sse_retry?: Duration;
  /**
   * How long a message stored for SSE resumption is kept; at least 1s.
   * @default "1h"
   */
  resumption_retention?: Duration;
}

/** Where the journal and the sealed arguments and results live. */
export interface StoreSection {
  /**
   * `sqlite`: files in the data folder; `postgres`: a PostgreSQL server that several gateway processes can share.
   * @default "sqlite"
   */
  driver?: 'sqlite' | 'postgres';
  /**
   * SQLite durability (`sqlite` only). `ONCEGATE_SYNCHRONOUS` overrides it.
   * @default "FULL"
   */
  synchronous?: 'FULL' | 'EXTRA' | 'NORMAL';
  /**
   * The server (`postgres` only, and required there): `postgres://user[:password]@host:5432/database[?sslmode=require]`.
   * Put the password in `ONCEGATE_STORE_URL` rather than the file.
   */
  url?: NonEmptyString;
}

/**
 * `agent:<name>`, or `*` for any authenticated agent.
 * @pattern ^(\*|agent:[a-z0-9][a-z0-9_.-]{0,63})$
 * @patternErrorMessage Not an actor; write agent:<name> or '*'
 */
export type Actor = string;

/** One rule of the policy. */
export interface PolicyRuleEntry {
  /** Tool names, or `*` for every tool. */
  tools: NonEmptyString[];
  /** `agent:<name>`, or `*` for any authenticated agent. */
  actors: Actor[];
  /** `allow` outright, only inside a run that holds a session grant (`run_grant`), or never (`deny`). */
  decision: 'allow' | 'run_grant' | 'deny';
}

/** The authorization policy, first matching rule wins; no match denies. */
export interface AuthorizationSection {
  /** The rules, in order: the first that matches a call decides it. */
  rules?: PolicyRuleEntry[];
  /** Shorthand read after the rules: tool name (or `*`) → the actors allowed to call it outright. */
  allow?: Record<string, Actor[]>;
  /**
   * An approval request nobody decides is denied after this long; longer than 0s.
   * @default "15m"
   */
  approval_timeout?: Duration;
}

/** The bundled demo target, started as a child process before anything else. */
export interface DemoTargetSection {
  /**
   * Start it.
   * @default false
   */
  enabled?: boolean;
  /**
   * Its port.
   * @default 8790
   */
  port?: Port;
}

/** The most detailed log level written. */
export type LogLevel = 'error' | 'warn' | 'log' | 'debug' | 'verbose';

/**
 * A Kafka broker, `host:port`.
 * @pattern ^([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$
 * @patternErrorMessage Not host:port, e.g. kafka-1.example.com:9092
 */
export type Broker = string;

/**
 * A Kafka topic name (Kafka's own rule).
 * @pattern ^(?!\.{1,2}$)[a-zA-Z0-9._-]{1,249}$
 * @patternErrorMessage Not a Kafka topic name; use 1 to 249 of a-z A-Z 0-9 . _ -
 */
export type TopicName = string;

/** One rule of `kafka.topics`: events of these types, or of streams of these categories, go to `topic`. */
export interface KafkaTopicRule {
  /** The Kafka topic these events go to. */
  topic: TopicName;
  /** Event types (docs/events/ lists them); name either `events` or `streams`. */
  events?: NonEmptyString[];
  /** Stream categories (the part of a stream name before its first `-`); name either `events` or `streams`. */
  streams?: NonEmptyString[];
}

/** Approval decisions and review resolutions taken from the bus, each answered on `replies`. */
export interface KafkaDecisionsSection {
  /** The topic decisions arrive on. */
  topic: TopicName;
  /** The topic outcomes of decisions (applied, or refused and why) go to. */
  replies: TopicName;
  /**
   * The Kafka consumer group the relays share the decisions topic in.
   * @default "oncegate-decisions"
   */
  group?: NonEmptyString;
  /**
   * Whether every decision must carry `signature`: Ed25519, by a key of the approver named in `by` that is not
   * revoked (`oncegate approvers key add`). Without it a decision's author is whoever may write to the topic; a
   * signature present is checked either way.
   * @default false
   */
  require_signature?: boolean;
}

/** The organisation's Kafka bus. */
export interface KafkaSection {
  /**
   * `host:port` of the brokers to bootstrap from; required unless `ONCEGATE_KAFKA_BROKERS` names them.
   * @minItems 1
   * @errorMessage Name at least one broker, e.g. [kafka-1.example.com:9092]
   */
  brokers?: Broker[];
  /**
   * The Kafka client id.
   * @default "oncegate"
   */
  client_id?: NonEmptyString;
  /**
   * The CloudEvents `source` of every relayed event.
   * @default "oncegate"
   */
  source?: NonEmptyString;
  /** Which events go where, first matching rule wins; the rest goes to `default_topic`. */
  topics?: KafkaTopicRule[];
  /**
   * The topic of events no rule takes.
   * @default "oncegate.events"
   */
  default_topic?: TopicName;
  /**
   * How long the relay's claim on publishing lasts unless renewed: a standby relay takes over that long after a
   * crash. At least 300ms.
   * @default "10s"
   */
  lease?: Duration;
  /** Approval decisions and review resolutions taken from the bus; off without it. */
  decisions?: KafkaDecisionsSection;
  /**
   * `exactly_once`: each batch of events and the relay's checkpoint are committed in one Kafka transaction, so a
   * consumer with `isolation.level=read_committed` reads every event once, across crashes of the relay and restarts
   * of the broker. `at_least_once`: for brokers without transactions; after a crash the relay sends again what it
   * sent but had not checkpointed (duplicates carry the same `ce_id`).
   * @default "exactly_once"
   */
  delivery?: KafkaDelivery;
  /**
   * The transactional id every relay of this journal shares (exactly once): a relay that starts fences the ones
   * before it. It is also the consumer group the relay's checkpoint is committed in. Default: `oncegate-relay:` and
   * `source`.
   */
  transactional_id?: NonEmptyString;
  /**
   * The topic (one partition; created if missing and allowed) under whose offsets the relay's checkpoint is
   * committed (exactly once). Nothing is written to it.
   * @default "oncegate.relay-checkpoints"
   */
  checkpoint_topic?: TopicName;
  /**
   * TLS to the brokers (`tls: {}` trusts the CAs Node trusts). `ONCEGATE_KAFKA_TLS_*` override its fields; without it
   * the relay speaks PLAINTEXT.
   */
  tls?: KafkaTlsSection;
  /** SASL authentication to the brokers, over TLS only. `ONCEGATE_KAFKA_SASL_*` override its fields. */
  sasl?: KafkaSaslSection;
}

/** How the relay publishes: in Kafka transactions, or at least once. */
export type KafkaDelivery = 'exactly_once' | 'at_least_once';

/** TLS to the brokers: whom to trust, and the client certificate for brokers that require one. */
export interface KafkaTlsSection {
  /** A PEM file of the CA certificates the brokers' certificates must chain to; without it, the CAs Node trusts. */
  ca_file?: NonEmptyString;
  /** A PEM file of the client certificate, for brokers that require one (mTLS); with `key_file`. */
  cert_file?: NonEmptyString;
  /**
   * A PEM file of the client certificate's private key, unencrypted (keep it mode 0600); with `cert_file`. The key is
   * read from the file only, never written here.
   */
  key_file?: NonEmptyString;
  /** The name the brokers' certificates must carry, when it is not the host each broker is reached by. */
  server_name?: NonEmptyString;
}

/** SASL to the brokers: the mechanism, the user, and where the password is (the vault or a file, never here). */
export interface KafkaSaslSection {
  /** The SASL mechanism the brokers' listener enables. */
  mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
  /** The Kafka user. */
  username: NonEmptyString;
  /**
   * A `password` credential in the vault, by name (`oncegate vault set <ref> --kind password --bind <broker host:port>`),
   * sent only to the brokers it is bound to. Name either `credential_ref` or `password_file`.
   */
  credential_ref?: CredentialRef;
  /** A file holding the password (one trailing line break is dropped), read at each connection. */
  password_file?: NonEmptyString;
}

/**
 * The name of a credential in the vault, never the credential itself.
 * @pattern ^[A-Za-z0-9][A-Za-z0-9_.:/-]*$
 * @patternErrorMessage Must name a credential (letters, digits, '_', '.', ':', '/', '-'), never contain one
 */
export type CredentialRef = string;

/**
 * A JWT claim name, e.g. `sub`, `client_id` or `roles`.
 * @pattern ^[A-Za-z_][A-Za-z0-9_:.\/-]{0,127}$
 * @patternErrorMessage Not a claim name; write e.g. sub, client_id or roles
 */
export type ClaimName = string;

/**
 * An OAuth scope (RFC 6749: printable, no spaces or quotes).
 * @pattern ^[\x21\x23-\x5b\x5d-\x7e]+$
 * @patternErrorMessage Not a scope (RFC 6749: printable, no spaces or quotes)
 */
export type Scope = string;

/** Tokens whose `claim` holds `value` (equal, or in a list) act as `approver:<name_claim>` on the approvals API and console. */
export interface OAuthApproverSection {
  /** The claim that marks an approver, e.g. `roles`. */
  claim: ClaimName;
  /**
   * The value it must hold, e.g. `oncegate-approver`.
   * @errorMessage Must be text, a number or true or false
   */
  value: NonEmptyString | number | boolean;
  /**
   * The claim whose value names the approver.
   * @default "sub"
   */
  name_claim?: ClaimName;
}

/** The gateway as an OAuth 2.1 resource server for the organisation's identity provider. */
export interface OAuthSection {
  /** The identity provider's issuer identifier (`https`, or `http` on loopback), e.g. `https://idp.example.com/realms/agents`. */
  issuer: NonEmptyString;
  /** This gateway's public MCP URL, the tokens' audience (RFC 8707), e.g. `https://gateway.example.com/mcp`. */
  resource: NonEmptyString;
  /** Where the issuer's signing keys are; from the issuer's metadata (`jwks_uri`) when absent. */
  jwks_uri?: NonEmptyString;
  /**
   * The claim whose value names the agent: a token with `<claim>: build-bot` acts as `agent:build-bot`.
   * @default "sub"
   */
  agent_claim?: ClaimName;
  /** Scopes every MCP request's token must hold (also advertised as `scopes_supported`). */
  scopes?: Scope[];
  /** Tokens that act as approvers; none without it. */
  approver?: OAuthApproverSection;
  /**
   * How long a key set read serves before it is read again: a key the provider dropped is refused within it. At
   * least 1s.
   * @default "10m"
   */
  keys_max_age?: Duration;
  /**
   * How long past `keys_max_age` the keys read last keep serving while the key set cannot be read; 0 serves none
   * past their age.
   * @default "24h"
   */
  keys_stale_if_error?: Duration;
}

/** The operations listener: `/metrics`, `/healthz`, `/readyz`. */
export interface OperationsSection {
  /**
   * The address to listen on.
   * @default "127.0.0.1"
   */
  host?: NonEmptyString;
  /**
   * The port; 0 picks a free one, printed at start. `ONCEGATE_OPS_PORT` overrides it.
   * @default 9464
   */
  port?: Port;
}

/** Where spans go. */
export interface TracingSection {
  /**
   * The OTLP/HTTP endpoint spans are sent to (`<endpoint>/v1/traces`), e.g. `http://otel-collector:4318`; an http(s)
   * URL without a user or password. `ONCEGATE_OTLP_ENDPOINT` overrides it.
   */
  endpoint: NonEmptyString;
  /**
   * The share of new traces recorded.
   * @minimum 0
   * @maximum 1
   * @default 1
   * @errorMessage Must be a number from 0 to 1 (the share of new traces recorded)
   */
  sample_ratio?: number;
}

/**
 * An agent name, without `agent:`.
 * @pattern ^[a-z0-9][a-z0-9_.-]{0,63}$
 * @patternErrorMessage Not an agent name; write e.g. conformance (requests without a token are then served as agent:conformance)
 */
export type AgentName = string;

/** Test only. */
export interface TestingSection {
  /**
   * Test only: MCP requests without an `Authorization` header are served as `agent:<name>`. Refused unless the
   * gateway listens on, and answers to, loopback only.
   */
  unauthenticated_agent?: AgentName;
  /**
   * Test only: an attempt dispatched inline is sent this long after the commit that recorded `Dispatched`, so a
   * fault test can stop the process in between.
   * @default 0
   */
  hold_before_send?: Duration;
  /** Test only: the named service's handlers fail while the file exists, so a fault test sees events parked and replayed. */
  fail_handling?: FailHandlingSection;
}

/** Test only: a service's handlers fail while a file exists. */
export interface FailHandlingSection {
  /** The service whose handlers fail: one that consumes events. */
  service: 'authorization' | 'dispatcher-http' | 'dispatcher-ssh' | 'result-delivery';
  /** The file whose presence is the fault. */
  while_file_exists: NonEmptyString;
}
