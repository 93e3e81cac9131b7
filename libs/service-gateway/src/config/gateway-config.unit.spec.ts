import { describe, expect, it } from 'vitest';
import { hostRulesOf } from '../front/host-origin-guard';
import { applyEnvironment, GatewayConfigError, parseGatewayConfig } from '@oncegate/host-config';

function issuesOf(text: string): string[] {
  try {
    parseGatewayConfig(text, 'oncegate.yaml');
  } catch (error) {
    if (error instanceof GatewayConfigError) return error.message.split('\n').slice(1);
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

describe('the authorization section of the configuration', () => {
  it('reads rules in order, then the allow shorthand, with where each was written', () => {
    const config = parseGatewayConfig(
      [
        'authorization:',
        '  rules:',
        '    - { tools: [deploy], actors: [agent:ci], decision: run_grant }',
        "    - { tools: ['*'], actors: [agent:intruder], decision: deny }",
        '  allow:',
        "    get_build: ['*']",
        '  approval_timeout: 90s',
      ].join('\n'),
      'oncegate.yaml',
    );
    expect(config.policy.map(({ tools, actors, decision, source }) => ({ tools, actors, decision, source }))).toEqual([
      { tools: ['deploy'], actors: ['agent:ci'], decision: 'run_grant', source: 'authorization.rules[0]' },
      { tools: ['*'], actors: ['agent:intruder'], decision: 'deny', source: 'authorization.rules[1]' },
      { tools: ['get_build'], actors: ['*'], decision: 'allow', source: 'authorization.allow.get_build' },
    ]);
    expect(config.policy[0]?.at).toEqual({ line: 3, column: 16 });
    expect(config.approvalTimeoutMs).toBe(90_000);
  });

  it('allows everything to every agent when there is no authorization section, and times approvals out after 15 minutes', () => {
    const config = parseGatewayConfig('call_wait: 5s\n', 'oncegate.yaml');
    expect(config.policy).toEqual([expect.objectContaining({ tools: ['*'], actors: ['*'], decision: 'allow' })]);
    expect(config.approvalTimeoutMs).toBe(15 * 60_000);
  });

  it('denies everything when the section names no rule', () => {
    expect(parseGatewayConfig('authorization: { approval_timeout: 1m }\n', 'oncegate.yaml').policy).toEqual([]);
  });

  it('names the file, line, path and reason of every mistake', () => {
    const issues = issuesOf(
      [
        'authorization:',
        '  rules:',
        '    - { tools: [deploy], actors: [agent:ci], decision: maybe }',
        '    - { tools: [deploy], actors: [ci-bot], decision: allow }',
        '    - { tools: [deploy], decison: allow }',
        '  approval_timeout: soon',
        '  approvers: [alice]',
      ].join('\n'),
    );
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^oncegate\.yaml:3:\d+ authorization\.rules\[0\]\.decision: .*allow.*run_grant.*deny/),
        expect.stringMatching(/^oncegate\.yaml:4:\d+ authorization\.rules\[1\]\.actors: 'ci-bot' is not an actor/),
        expect.stringMatching(/^oncegate\.yaml:5:\d+ authorization\.rules\[2\]\.decison: .*decision/),
        expect.stringMatching(/^oncegate\.yaml:6:\d+ authorization\.approval_timeout: 'soon' is not a duration/),
        expect.stringMatching(/^oncegate\.yaml:7:\d+ authorization\.approvers: /),
      ]),
    );
  });

  it('refuses an approval timeout of zero', () => {
    expect(issuesOf('authorization: { approval_timeout: 0s }\n')).toEqual([
      expect.stringMatching(/authorization\.approval_timeout: must be longer than 0s/),
    ]);
  });
});

describe('the instance lease of the configuration', () => {
  it('lasts 15 seconds unless configured, and takes a duration', () => {
    expect(parseGatewayConfig('call_wait: 5s\n', 'oncegate.yaml').instanceLeaseMs).toBe(15_000);
    expect(parseGatewayConfig('instance_lease: 1s\n', 'oncegate.yaml').instanceLeaseMs).toBe(1_000);
  });

  it('refuses a lease too short to renew and one that is not a duration', () => {
    expect(issuesOf('instance_lease: 100ms\n')).toEqual([expect.stringMatching(/instance_lease: must be at least 300ms/)]);
    expect(issuesOf('instance_lease: soon\n')).toEqual([expect.stringMatching(/instance_lease: 'soon' is not a duration/)]);
  });
});

describe('the services apart: dispatch_in_flight and the test-only fail_handling', () => {
  it('caps a dispatcher at 256 attempts in flight unless configured, and refuses a cap below one', () => {
    expect(parseGatewayConfig('', 'oncegate.yaml').dispatchInFlight).toBe(256);
    expect(parseGatewayConfig('dispatch_in_flight: 4\n', 'oncegate.yaml').dispatchInFlight).toBe(4);
    expect(issuesOf('dispatch_in_flight: 0\n')).toEqual([expect.stringMatching(/dispatch_in_flight/)]);
  });

  it('dispatches on every built-in channel in the embedded gateway unless told which, and refuses a channel it cannot host', () => {
    expect(parseGatewayConfig('', 'oncegate.yaml').dispatchChannels).toEqual(['http', 'ssh', 'mcp']);
    expect(parseGatewayConfig('dispatch_channels: [http, ssh]\n', 'oncegate.yaml').dispatchChannels).toEqual(['http', 'ssh']);
    expect(parseGatewayConfig('dispatch_channels: []\n', 'oncegate.yaml').dispatchChannels).toEqual([]);
    expect(issuesOf('dispatch_channels: [http, sql]\n')).toEqual(["oncegate.yaml:1:27 dispatch_channels: 'sql' is not allowed; expected one of: http, ssh, mcp"]);
    expect(issuesOf('dispatch_channels: [mcp, mcp]\n')).toEqual(["oncegate.yaml:1:20 dispatch_channels: 'mcp' is named twice; name each channel once"]);
  });

  it('reads fail_handling with its service and file, and names what is missing or unknown', () => {
    expect(parseGatewayConfig('', 'oncegate.yaml').failHandling).toBeNull();
    expect(parseGatewayConfig('testing: { fail_handling: { service: authorization, while_file_exists: /tmp/fault } }\n', 'oncegate.yaml').failHandling).toEqual({
      service: 'authorization',
      whileFileExists: '/tmp/fault',
    });
    expect(issuesOf('testing: { fail_handling: { service: authorization } }\n')).toEqual([expect.stringMatching(/testing\.fail_handling\.while_file_exists: required/)]);
    expect(issuesOf('testing: { fail_handling: { while_file_exists: /tmp/fault } }\n')).toEqual([expect.stringMatching(/testing\.fail_handling\.service: required: one of authorization, dispatcher-http/)]);
    expect(issuesOf('testing: { fail_handling: { service: sealer, while_file_exists: /tmp/fault } }\n')).toEqual([expect.stringMatching(/testing\.fail_handling\.service/)]);
  });
});

describe('docs/authorization.md', () => {
  it('given the policy the doc shows, when parsed, then it is valid and reads as the doc says', async () => {
    const { readFile } = await import('node:fs/promises');
    const doc = await readFile(new URL('../../../../docs/authorization.md', import.meta.url), 'utf8');
    const block = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
    const config = parseGatewayConfig(block, 'docs/authorization.md');
    expect(config.policy.map((rule) => rule.decision)).toEqual(['allow', 'run_grant', 'deny', 'allow']);
    expect(config.approvalTimeoutMs).toBe(15 * 60_000);
  });
});

describe('the allowed hosts and origins of the listener', () => {
  it('reads listen.allowed_hosts and listen.allowed_origins, and leaves the loopback default when absent', () => {
    const config = parseGatewayConfig(
      ['listen:', '  host: 0.0.0.0', "  allowed_hosts: [gateway.example.com, 'gateway.example.com:8443', '*.corp.example']", '  allowed_origins: [https://console.example.com]'].join('\n'),
      'oncegate.yaml',
    );
    expect(config.allowedHosts).toEqual(['gateway.example.com', 'gateway.example.com:8443', '*.corp.example']);
    expect(config.allowedOrigins).toEqual(['https://console.example.com']);
    expect(hostRulesOf(config)).toEqual({ allowedHosts: config.allowedHosts, allowedOrigins: config.allowedOrigins });
    expect(parseGatewayConfig('', 'oncegate.yaml').allowedHosts).toBeNull();
    expect(hostRulesOf(parseGatewayConfig('', 'oncegate.yaml')).allowedHosts).toEqual(['localhost', '127.0.0.1', '[::1]']);
  });

  it('names a bad host or origin, and refuses an exposed listener that names no host', () => {
    expect(issuesOf(['listen:', "  allowed_hosts: ['http://gateway.example.com/']", "  allowed_origins: ['console.example.com', 'https://x.example/path']"].join('\n'))).toEqual([
      expect.stringMatching(/oncegate\.yaml:2:\d+ listen\.allowed_hosts: 'http:\/\/gateway\.example\.com\/' is not a host name/),
      expect.stringMatching(/oncegate\.yaml:3:\d+ listen\.allowed_origins: 'console\.example\.com' is not an origin/),
      expect.stringMatching(/oncegate\.yaml:3:\d+ listen\.allowed_origins: 'https:\/\/x\.example\/path' is not an origin/),
    ]);
    expect(() => hostRulesOf(parseGatewayConfig('listen: { host: 0.0.0.0 }', 'oncegate.yaml'))).toThrow(
      /listen\.allowed_hosts: required when listen\.host \(0\.0\.0\.0\) is not a loopback address/,
    );
  });
});

describe('the sessions held in memory (listen section)', () => {
  it('keeps sessions 30 minutes idle and 100 per agent unless told otherwise', () => {
    expect(parseGatewayConfig('listen: { port: 1 }', 'oncegate.yaml').sessions).toEqual({ idleMs: 30 * 60_000, perActor: 100 });
    expect(parseGatewayConfig('listen: { session_idle: 90s, sessions_per_agent: 3 }', 'oncegate.yaml').sessions).toEqual({ idleMs: 90_000, perActor: 3 });
  });

  it('refuses an idle limit of zero and a cap below one', () => {
    expect(issuesOf('listen: { session_idle: 0s, sessions_per_agent: 0 }').join('\n')).toMatch(/listen\.session_idle: must be longer than 0s[\s\S]*listen\.sessions_per_agent/);
  });
});

describe('SSE resumption settings (listen section)', () => {
  it('sends a 2 s retry and keeps resumption messages for an hour unless told otherwise', () => {
    const config = parseGatewayConfig('listen: { port: 1 }', 'oncegate.yaml');
    expect(config.sseRetryMs).toBe(2_000);
    expect(config.resumptionRetentionMs).toBe(60 * 60_000);
    expect(parseGatewayConfig('listen: { sse_retry: 500ms, resumption_retention: 10m }', 'oncegate.yaml')).toMatchObject({
      sseRetryMs: 500,
      resumptionRetentionMs: 600_000,
    });
  });

  it('names a retry below 100ms, a retention below a second and a value that is not a duration', () => {
    expect(issuesOf(['listen:', '  sse_retry: 0', '  resumption_retention: 500ms'].join('\n'))).toEqual([
      expect.stringMatching(/^oncegate\.yaml:2:\d+ listen\.sse_retry: must be at least 100ms/),
      expect.stringMatching(/^oncegate\.yaml:3:\d+ listen\.resumption_retention: must be at least 1s/),
    ]);
    expect(issuesOf('listen: { sse_retry: soon }')).toEqual([expect.stringMatching(/listen\.sse_retry: 'soon' is not a duration/)]);
  });
});

describe('the test-only unauthenticated agent (testing section)', () => {
  it('is off by default: every request needs a token', () => {
    expect(parseGatewayConfig('', 'oncegate.yaml').unauthenticatedAgent).toBeNull();
    expect(parseGatewayConfig('listen: { host: 127.0.0.1 }', 'oncegate.yaml').unauthenticatedAgent).toBeNull();
  });

  it('names the agent a request without a token is served as, on a gateway that listens on and answers to loopback only', () => {
    const config = parseGatewayConfig(
      ['listen:', '  host: 127.0.0.1', "  allowed_hosts: [localhost, '127.0.0.1:8787', '[::1]']", 'testing:', '  unauthenticated_agent: conformance'].join('\n'),
      'oncegate.yaml',
    );
    expect(config.unauthenticatedAgent).toBe('agent:conformance');
  });

  it('is refused, with file, line, path and reason, on a gateway others can reach', () => {
    const on = (listen: string[]) => issuesOf(['listen:', ...listen, 'testing:', '  unauthenticated_agent: conformance'].join('\n'));
    expect(on(['  host: 0.0.0.0', '  allowed_hosts: [gateway.example.com]'])).toEqual([
      "oncegate.yaml:5:26 testing.unauthenticated_agent: test only, refused: listen.host is 0.0.0.0, not a loopback address: requests without a token would be served to whoever reaches it",
    ]);
    expect(on(['  host: 127.0.0.1', "  allowed_hosts: [localhost, 'gateway.example.com']"])).toEqual([
      expect.stringMatching(/^oncegate\.yaml:5:26 testing\.unauthenticated_agent: test only, refused: listen\.allowed_hosts names gateway\.example\.com/),
    ]);
    expect(on(['  host: localhost', '  allowed_origins: [https://console.example.com]'])).toEqual([
      expect.stringMatching(/^oncegate\.yaml:5:26 testing\.unauthenticated_agent: test only, refused: listen\.allowed_origins is not empty/),
    ]);
    expect(issuesOf('testing: { unauthenticated_agent: Agent:Conformance, tokenless: true }')).toEqual([
      expect.stringMatching(/^oncegate\.yaml:1:\d+ testing\.tokenless: unknown field/),
      expect.stringMatching(/^oncegate\.yaml:1:\d+ testing\.unauthenticated_agent: 'Agent:Conformance' is not an agent name/),
    ]);
  });

  it('given the example of docs/gateway.md, when parsed, then it serves token-less requests as agent:conformance', async () => {
    const { readFile } = await import('node:fs/promises');
    const doc = await readFile(new URL('../../../../docs/gateway.md', import.meta.url), 'utf8');
    const block = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? '').find((text) => text.includes('unauthenticated_agent'));
    expect(parseGatewayConfig(block ?? '', 'docs/gateway.md').unauthenticatedAgent).toBe('agent:conformance');
  });

  it('is refused when ONCEGATE_HOST moves a loopback gateway onto another address', () => {
    const config = parseGatewayConfig('testing: { unauthenticated_agent: conformance }', 'oncegate.yaml');
    expect(() => applyEnvironment(config, { ONCEGATE_HOST: '0.0.0.0' })).toThrow(
      /environment:0:0 ONCEGATE_HOST: testing\.unauthenticated_agent \(oncegate\.yaml\) is test only, refused: listen\.host is 0\.0\.0\.0/,
    );
    expect(applyEnvironment(config, { ONCEGATE_HOST: '127.0.0.2' }).unauthenticatedAgent).toBe('agent:conformance');
  });
});

describe('the store section of the configuration', () => {
  const PASSWORD = 'pw-canary-51f3';

  it('keeps the journal in SQLite with synchronous=FULL unless told otherwise', () => {
    expect(parseGatewayConfig('', 'oncegate.yaml').store).toEqual({ driver: 'sqlite', synchronous: 'FULL' });
    expect(parseGatewayConfig('store: { synchronous: NORMAL }', 'oncegate.yaml').store).toEqual({ driver: 'sqlite', synchronous: 'NORMAL' });
    expect(parseGatewayConfig('store: { driver: sqlite, synchronous: EXTRA }', 'oncegate.yaml').store).toEqual({ driver: 'sqlite', synchronous: 'EXTRA' });
  });

  it('given driver postgres and a URL, when parsed, then the store is that server', () => {
    const url = `postgres://oncegate:${PASSWORD}@db.internal:5432/oncegate?sslmode=require`;
    expect(parseGatewayConfig(['store:', '  driver: postgres', `  url: ${url}`].join('\n'), 'oncegate.yaml').store).toEqual({ driver: 'postgres', url });
    expect(parseGatewayConfig('store: { driver: postgres, url: "postgresql://db/oncegate" }', 'oncegate.yaml').store).toEqual({
      driver: 'postgres',
      url: 'postgresql://db/oncegate',
    });
  });

  it('names an unknown driver with the drivers there are', () => {
    expect(issuesOf(['store:', '  driver: postgresql'].join('\n'))).toEqual([
      "oncegate.yaml:2:11 store.driver: 'postgresql' is not allowed; expected one of: sqlite, postgres — did you mean 'postgres'?",
    ]);
  });

  it('given driver postgres without a URL in the file or the environment, then the missing url is named', () => {
    expect(issuesOf(['data_dir: ./data', 'store:', '  driver: postgres'].join('\n'))).toEqual([
      expect.stringMatching(/^oncegate\.yaml:3:3 store\.url: required with store\.driver postgres: write postgres:\/\/user@host:5432\/database, or set ONCEGATE_STORE_URL/),
    ]);
  });

  it('given a URL that is not a PostgreSQL URL, then it is refused without repeating the value (it may hold a password)', () => {
    const issues = issuesOf(['store:', '  driver: postgres', `  url: mysql://oncegate:${PASSWORD}@db/oncegate`].join('\n'));
    expect(issues).toEqual([expect.stringMatching(/^oncegate\.yaml:3:8 store\.url: not a PostgreSQL URL; write postgres:\/\/user@host:5432\/database/)]);
    expect(issues.join('\n')).not.toContain(PASSWORD);
    expect(issuesOf('store: { driver: postgres, url: "db.internal:5432" }')).toEqual([expect.stringMatching(/^oncegate\.yaml:1:33 store\.url: not a PostgreSQL URL/)]);
  });

  it('refuses synchronous with postgres and a url with sqlite: each belongs to the other driver', () => {
    expect(issuesOf(['store:', '  driver: postgres', '  url: postgres://db/oncegate', '  synchronous: FULL'].join('\n'))).toEqual([
      expect.stringMatching(/^oncegate\.yaml:4:16 store\.synchronous: applies to store\.driver sqlite only/),
    ]);
    expect(issuesOf(['store:', '  driver: sqlite', '  url: postgres://db/oncegate'].join('\n'))).toEqual([
      expect.stringMatching(/^oncegate\.yaml:3:8 store\.url: applies to store\.driver postgres only/),
    ]);
    expect(issuesOf('store: { driver: postgres, url: postgres://db/x, pool: 3 }')).toEqual([expect.stringMatching(/store\.pool: unknown field/)]);
  });

  it('given ONCEGATE_STORE_URL, then it supplies the URL the file leaves out, or overrides the one it has', () => {
    const url = `postgres://oncegate:${PASSWORD}@db.internal/oncegate`;
    const env = { ONCEGATE_STORE_URL: url };
    const withoutUrl = parseGatewayConfig('store: { driver: postgres }', 'oncegate.yaml', undefined, env);
    expect(applyEnvironment(withoutUrl, env).store).toEqual({ driver: 'postgres', url });
    const withUrl = parseGatewayConfig('store: { driver: postgres, url: "postgres://other/db" }', 'oncegate.yaml');
    expect(applyEnvironment(withUrl, env).store).toEqual({ driver: 'postgres', url });
  });

  it('given the example of docs/gateway.md, when parsed with ONCEGATE_STORE_URL, then the store is that server', async () => {
    const { readFile } = await import('node:fs/promises');
    const doc = await readFile(new URL('../../../../docs/gateway.md', import.meta.url), 'utf8');
    const block = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? '').find((text) => text.includes('driver: postgres'));
    const url = `postgres://oncegate:${PASSWORD}@db.internal:5432/oncegate?sslmode=require`;
    const config = parseGatewayConfig(block ?? '', 'docs/gateway.md', undefined, { ONCEGATE_STORE_URL: url });
    expect(config.store).toEqual({ driver: 'postgres', url: 'postgres://oncegate@db.internal:5432/oncegate?sslmode=require' });
    expect(applyEnvironment(config, { ONCEGATE_STORE_URL: url }).store).toEqual({ driver: 'postgres', url });
  });

  it('refuses ONCEGATE_STORE_URL on a SQLite store, a value that is not a PostgreSQL URL, and ONCEGATE_SYNCHRONOUS on a PostgreSQL store', () => {
    const sqlite = parseGatewayConfig('', 'oncegate.yaml');
    expect(() => applyEnvironment(sqlite, { ONCEGATE_STORE_URL: 'postgres://db/x' })).toThrow(
      /environment:0:0 ONCEGATE_STORE_URL: applies to store\.driver postgres only; oncegate\.yaml sets sqlite/,
    );
    const postgres = parseGatewayConfig('store: { driver: postgres, url: "postgres://db/x" }', 'oncegate.yaml');
    let message = '';
    try {
      applyEnvironment(postgres, { ONCEGATE_STORE_URL: `mysql://u:${PASSWORD}@db/x` });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/ONCEGATE_STORE_URL: not a PostgreSQL URL/);
    expect(message).not.toContain(PASSWORD);
    expect(() => applyEnvironment(postgres, { ONCEGATE_SYNCHRONOUS: 'NORMAL' })).toThrow(/ONCEGATE_SYNCHRONOUS: applies to store\.driver sqlite only/);
  });
});

describe('the kafka section of the configuration', () => {
  it('given brokers, topic rules, a default topic and decisions, when parsed, then each is read and the rest defaults', () => {
    const config = parseGatewayConfig(
      [
        'kafka:',
        '  brokers: [kafka-1.example.com:9092, "[::1]:9093"]',
        '  source: //oncegate.example.com/prod',
        '  topics:',
        '    - { topic: oncegate.approvals, events: [ApprovalRequested, ApprovalGranted, ApprovalDenied] }',
        '    - { topic: oncegate.vault, streams: [vault] }',
        '  default_topic: oncegate.all',
        '  lease: 4s',
        '  decisions: { topic: oncegate.decisions, replies: oncegate.decision-outcomes }',
      ].join('\n'),
      'oncegate.yaml',
    );
    expect(config.kafka).toEqual({
      brokers: ['kafka-1.example.com:9092', '[::1]:9093'],
      clientId: 'oncegate',
      source: '//oncegate.example.com/prod',
      routes: [
        { topic: 'oncegate.approvals', eventTypes: ['ApprovalRequested', 'ApprovalGranted', 'ApprovalDenied'], streams: null },
        { topic: 'oncegate.vault', eventTypes: null, streams: ['vault'] },
      ],
      defaultTopic: 'oncegate.all',
      leaseMs: 4_000,
      decisions: { topic: 'oncegate.decisions', replies: 'oncegate.decision-outcomes', group: 'oncegate-decisions', requireSignature: false },
      delivery: 'exactly_once',
      transactionalId: 'oncegate-relay://oncegate.example.com/prod',
      checkpointTopic: 'oncegate.relay-checkpoints',
    });
    expect(parseGatewayConfig('call_wait: 5s\n', 'oncegate.yaml').kafka).toBeNull();
    const signed = parseGatewayConfig(
      'kafka:\n  brokers: [kafka-1.example.com:9092]\n  decisions: { topic: oncegate.decisions, replies: oncegate.decision-outcomes, require_signature: true }\n',
      'oncegate.yaml',
    );
    expect(signed.kafka?.decisions?.requireSignature).toBe(true);
  });

  it('given at-least-once delivery, or a transactional id and checkpoint topic of its own, when parsed, then each is read; a delivery that is neither is refused with its line', () => {
    const kafka = (lines: string[]) => parseGatewayConfig(['kafka:', '  brokers: [kafka-1.example.com:9092]', ...lines].join('\n'), 'oncegate.yaml').kafka;
    expect(kafka(['  delivery: at_least_once'])).toMatchObject({ delivery: 'at_least_once', transactionalId: 'oncegate-relay:oncegate' });
    expect(kafka(['  transactional_id: payments-relay', '  checkpoint_topic: payments.relay-checkpoints'])).toMatchObject({
      delivery: 'exactly_once',
      transactionalId: 'payments-relay',
      checkpointTopic: 'payments.relay-checkpoints',
    });
    expect(issuesOf(['kafka:', '  brokers: [kafka-1.example.com:9092]', '  delivery: exactly-once', '  checkpoint_topic: "no spaces"'].join('\n'))).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^oncegate\.yaml:3:\d+ kafka\.delivery: .*exactly_once/),
        expect.stringMatching(/^oncegate\.yaml:4:\d+ kafka\.checkpoint_topic: 'no spaces' is not a Kafka topic name/),
      ]),
    );
  });

  it('given typos in the kafka section, when parsed, then each is refused with its line, path and reason', () => {
    const issues = issuesOf(
      [
        'kafka:',
        '  brokers: [kafka-1.example.com]',
        '  topics:',
        '    - { topic: oncegate.approvals, events: [ApprovalGrantd] }',
        '    - { topic: "bad topic", streams: [executions] }',
        '    - { topic: oncegate.x, events: [Dispatched], streams: [execution] }',
        '  decisions: { topic: oncegate.decisions, require_signature: sure }',
        '  lease: 10ms',
        '  partitions: 3',
      ].join('\n'),
    );
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^oncegate\.yaml:2:\d+ kafka\.brokers: 'kafka-1\.example\.com' is not host:port/),
        expect.stringMatching(/^oncegate\.yaml:4:\d+ kafka\.topics\[0\]\.events: 'ApprovalGrantd' is not an event type of the journal/),
        expect.stringMatching(/^oncegate\.yaml:5:\d+ kafka\.topics\[1\]\.topic: 'bad topic' is not a Kafka topic name/),
        expect.stringMatching(/^oncegate\.yaml:5:\d+ kafka\.topics\[1\]\.streams: 'executions' is not a stream category; one of .*execution/),
        expect.stringMatching(/^oncegate\.yaml:6:\d+ kafka\.topics\[2\]: name either events .* or streams/),
        expect.stringMatching(/^oncegate\.yaml:7:\d+ kafka\.decisions\.replies: /),
        expect.stringMatching(/^oncegate\.yaml:7:\d+ kafka\.decisions\.require_signature: /),
        expect.stringMatching(/^oncegate\.yaml:8:\d+ kafka\.lease: must be at least 300ms/),
        expect.stringMatching(/^oncegate\.yaml:9:\d+ kafka\.partitions: /),
      ]),
    );
  });

  it('given ONCEGATE_KAFKA_BROKERS, then it names the brokers the file leaves out, and a bad value is refused', () => {
    const env = { ONCEGATE_KAFKA_BROKERS: '127.0.0.1:9092,127.0.0.1:9093' };
    const config = applyEnvironment(parseGatewayConfig('kafka: { default_topic: oncegate.all }\n', 'oncegate.yaml', undefined, env), env);
    expect(config.kafka).toMatchObject({ brokers: ['127.0.0.1:9092', '127.0.0.1:9093'], defaultTopic: 'oncegate.all' });
    expect(applyEnvironment(parseGatewayConfig('', 'oncegate.yaml'), env).kafka).toMatchObject({ brokers: ['127.0.0.1:9092', '127.0.0.1:9093'], defaultTopic: 'oncegate.events' });
    expect(() => applyEnvironment(parseGatewayConfig('', 'oncegate.yaml'), { ONCEGATE_KAFKA_BROKERS: 'nope' })).toThrow(/ONCEGATE_KAFKA_BROKERS: expected host:port/);
    expect(issuesOf('kafka: { default_topic: x }\n')).toEqual([expect.stringMatching(/kafka\.brokers: .*ONCEGATE_KAFKA_BROKERS/)]);
  });
});

describe('the oauth section of the configuration', () => {
  it('given an issuer and a resource, when parsed, then the rest defaults (agent from sub, no scopes, no approvers, keys kept 10m, and 24h more while unreadable)', () => {
    const config = parseGatewayConfig('oauth: { issuer: https://idp.example.com/realms/agents, resource: https://gateway.example.com/mcp }\n', 'oncegate.yaml');
    expect(config.oauth).toEqual({
      issuer: 'https://idp.example.com/realms/agents',
      resource: 'https://gateway.example.com/mcp',
      jwksUri: null,
      agentClaim: 'sub',
      scopes: [],
      approver: null,
      keysMaxAgeMs: 600_000,
      keysStaleIfErrorMs: 86_400_000,
    });
    expect(parseGatewayConfig('call_wait: 5s\n', 'oncegate.yaml').oauth).toBeNull();
    expect(
      parseGatewayConfig(
        [
          'oauth:',
          '  issuer: http://127.0.0.1:9000',
          '  resource: http://127.0.0.1:8787/mcp',
          '  jwks_uri: http://127.0.0.1:9000/jwks',
          '  agent_claim: client_id',
          '  scopes: [mcp]',
          '  approver: { claim: roles, value: oncegate-approver }',
          '  keys_max_age: 5m',
          '  keys_stale_if_error: 0',
        ].join('\n'),
        'oncegate.yaml',
      ).oauth,
    ).toEqual({
      issuer: 'http://127.0.0.1:9000',
      resource: 'http://127.0.0.1:8787/mcp',
      jwksUri: 'http://127.0.0.1:9000/jwks',
      agentClaim: 'client_id',
      scopes: ['mcp'],
      approver: { claim: 'roles', value: 'oncegate-approver', nameClaim: 'sub' },
      keysMaxAgeMs: 300_000,
      keysStaleIfErrorMs: 0,
    });
  });

  it('given the example of docs/gateway.md, when parsed, then it is the configuration the docs describe', async () => {
    const { readFile } = await import('node:fs/promises');
    const doc = await readFile(new URL('../../../../docs/gateway.md', import.meta.url), 'utf8');
    const block = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? '').find((text) => text.startsWith('oauth:'));
    expect(parseGatewayConfig(block ?? '', 'docs/gateway.md').oauth).toMatchObject({
      issuer: 'https://idp.example.com/realms/agents',
      agentClaim: 'client_id',
      approver: { claim: 'roles', value: 'oncegate-approver', nameClaim: 'preferred_username' },
      keysMaxAgeMs: 600_000,
      keysStaleIfErrorMs: 86_400_000,
    });
  });

  it('given typos in the oauth section, when parsed, then each is refused with its line, path and reason', () => {
    const issues = issuesOf(
      [
        'oauth:',
        '  issuer: http://idp.example.com',
        '  resource: gateway.example.com/mcp',
        '  agent_claim: "client id"',
        '  scopes: ["mcp read"]',
        '  approver: { claim: roles }',
        '  audience: x',
        '  keys_max_age: 500ms',
        '  keys_stale_if_error: a day',
      ].join('\n'),
    );
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^oncegate\.yaml:2:\d+ oauth\.issuer: 'http:\/\/idp\.example\.com' must use https/),
        expect.stringMatching(/^oncegate\.yaml:3:\d+ oauth\.resource: 'gateway\.example\.com\/mcp' is not an absolute URL/),
        expect.stringMatching(/^oncegate\.yaml:4:\d+ oauth\.agent_claim: 'client id' is not a claim name/),
        expect.stringMatching(/^oncegate\.yaml:5:\d+ oauth\.scopes: 'mcp read' is not a scope/),
        expect.stringMatching(/^oncegate\.yaml:6:\d+ oauth\.approver\.value: /),
        expect.stringMatching(/^oncegate\.yaml:7:\d+ oauth\.audience: /),
        expect.stringMatching(/^oncegate\.yaml:8:\d+ oauth\.keys_max_age: must be at least 1s/),
        expect.stringMatching(/^oncegate\.yaml:9:\d+ oauth\.keys_stale_if_error: 'a day' is not a duration/),
      ]),
    );
    expect(issuesOf('oauth: { resource: https://gateway.example.com/mcp }\n')).toEqual([expect.stringMatching(/oauth\.issuer: .*issuer/)]);
  });
});

describe('the operations section of the configuration', () => {
  it('given no section, then no operations listener; given one, then its address, and ONCEGATE_OPS_PORT sets the port', () => {
    expect(parseGatewayConfig('', 'oncegate.yaml').operations).toBeNull();
    expect(parseGatewayConfig('operations: { port: 0 }\n', 'oncegate.yaml').operations).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseGatewayConfig('operations: { host: 0.0.0.0, port: 9500 }\n', 'oncegate.yaml').operations).toEqual({ host: '0.0.0.0', port: 9500 });
    expect(applyEnvironment(parseGatewayConfig('', 'oncegate.yaml'), { ONCEGATE_OPS_PORT: '9464' }).operations).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(() => applyEnvironment(parseGatewayConfig('', 'oncegate.yaml'), { ONCEGATE_OPS_PORT: 'x' })).toThrow(/ONCEGATE_OPS_PORT: 'x' is not a port/);
  });

  it('given a typo or a bad port, then it is refused with its line and path', () => {
    expect(issuesOf('operations: { prot: 9464 }\n')).toEqual([expect.stringMatching(/^oncegate\.yaml:1:\d+ operations\.prot: unknown field 'prot'/)]);
    expect(issuesOf('operations: { port: 70000 }\n')).toEqual([expect.stringMatching(/^oncegate\.yaml:1:\d+ operations\.port: must be between 0 and 65535/)]);
  });
});

describe('the tracing section of the configuration', () => {
  it('given an endpoint, then spans go there, every trace by default; ONCEGATE_OTLP_ENDPOINT sets it without the file', () => {
    expect(parseGatewayConfig('', 'oncegate.yaml').tracing).toBeNull();
    expect(parseGatewayConfig('tracing: { endpoint: "http://otel-collector:4318", sample_ratio: 0.25 }\n', 'oncegate.yaml').tracing).toEqual({ endpoint: 'http://otel-collector:4318', sampleRatio: 0.25 });
    expect(applyEnvironment(parseGatewayConfig('', 'oncegate.yaml'), { ONCEGATE_OTLP_ENDPOINT: 'https://otel.example.com' }).tracing).toEqual({ endpoint: 'https://otel.example.com', sampleRatio: 1 });
    expect(() => applyEnvironment(parseGatewayConfig('', 'oncegate.yaml'), { ONCEGATE_OTLP_ENDPOINT: 'otel:4318' })).toThrow(/ONCEGATE_OTLP_ENDPOINT: not an http\(s\) URL/);
  });

  it('given no endpoint, an endpoint that is not a URL or holds a password, or a ratio out of range, then each is refused with its line and path', () => {
    expect(issuesOf('tracing: { sample_ratio: 1 }\n')).toEqual([expect.stringMatching(/^oncegate\.yaml:1:\d+ tracing\.endpoint: missing required field 'endpoint': /)]);
    expect(issuesOf('tracing: { endpoint: "otel:4318" }\n')).toEqual([expect.stringMatching(/tracing\.endpoint: not an http\(s\) URL without a user or password/)]);
    const withPassword = issuesOf('tracing: { endpoint: "http://collector:hunter2-secret@otel:4318" }\n');
    expect(withPassword).toEqual([expect.stringMatching(/tracing\.endpoint: not an http\(s\) URL without a user or password/)]);
    expect(withPassword.join('\n')).not.toContain('hunter2');
    expect(issuesOf('tracing: { endpoint: "http://otel:4318", sample_ratio: 2 }\n')).toEqual([expect.stringMatching(/tracing\.sample_ratio: must be a number from 0 to 1/)]);
  });
});

describe('the configuration against the published schema (schemas/oncegate.schema.json)', () => {
  it('given a section written without a value, then it is refused rather than taken as absent', () => {
    expect(issuesOf('kafka:\n')).toEqual(['oncegate.yaml:1:1 kafka: must be a mapping, got nothing']);
  });

  it('given a value of the wrong type, then the reason says what was expected and what was found', () => {
    expect(issuesOf('dev_token: yes please\nlisten: { port: "8787" }\n')).toEqual([
      "oncegate.yaml:1:12 dev_token: must be true or false, got the string 'yes please'",
      "oncegate.yaml:2:17 listen.port: must be a whole number, got the string '8787'",
    ]);
  });
});
