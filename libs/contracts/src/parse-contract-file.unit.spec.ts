import { describe, expect, it } from 'vitest';
import type { ContractIssue } from './contract-issue';
import { ContractValidationError } from './contract-issue';
import { checkContractFile, parseContractFile } from './parse-contract-file';
import type { ToolContract } from './tool-contract';
import { validateArguments } from './validate-arguments';

const FILE = 'tools.yaml';
const HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDmq5d7VRGYcvplYbjkeXduaiv7IAyM892jopQZzPKOo';

/** A valid HTTP tool as YAML lines (indented for a `tools:` item), with `overrides` replacing or adding top-level fields. */
function httpTool(overrides: Record<string, string> = {}): string {
  const fields: Record<string, string> = {
    name: 'name: set_config',
    description: 'description: Set a config entry.',
    class: 'class: idempotent_write',
    channel: 'channel: http',
    target: 'target: demo/config',
    input_schema: [
      'input_schema:',
      '  type: object',
      '  properties:',
      '    name: { type: string }',
      '    value: { type: string }',
      '  required: [name, value]',
    ].join('\n'),
    http: ['http:', '  method: PUT', '  url: http://127.0.0.1:8790/config/{{args.name}}', '  body: { value: "{{args.value}}" }'].join('\n'),
    correlation_window: 'correlation_window: 5m',
    ...overrides,
  };
  return Object.values(fields)
    .filter((text) => text !== '')
    .map((text) => text.split('\n').map((line, index) => (index === 0 ? `  - ${line}` : `    ${line}`)).join('\n').replace(/^ {2}- /, ''))
    .map((text, index) => (index === 0 ? `  - ${text}` : `    ${text}`))
    .join('\n');
}

function file(...tools: string[]): string {
  return `version: 1\ntools:\n${tools.join('\n')}\n`;
}

function issuesOf(text: string): ContractIssue[] {
  const result = checkContractFile(text, FILE);
  if (result.ok) throw new Error('expected the contract to be refused');
  return [...result.issues];
}

function toolOf(text: string): ToolContract {
  const result = checkContractFile(text, FILE);
  if (!result.ok) throw new Error(result.issues.map((issue) => `${issue.path}: ${issue.reason}`).join('\n'));
  const [tool] = result.contract.tools;
  if (tool === undefined) throw new Error('no tool');
  return tool;
}

function reasonsOf(text: string): string[] {
  return issuesOf(text).map((issue) => `${issue.path}: ${issue.reason}`);
}

describe('a valid contract file', () => {
  it('given an HTTP tool with only required fields, when parsed, then defaults are filled and durations are in ms', () => {
    const tool = toolOf(file(httpTool({ http: ['http:', '  method: put', '  url: http://127.0.0.1:8790/config/{{args.name}}'].join('\n') })));
    expect(tool).toMatchObject({
      name: 'set_config',
      title: null,
      operationClass: 'idempotent_write',
      channel: 'http',
      target: 'demo/config',
      credentialRef: null,
      request: { kind: 'http', method: 'PUT', url: 'http://127.0.0.1:8790/config/{{args.name}}', headers: {}, idempotencyHeader: null },
      fingerprint: { exclude: [] },
      secretArguments: [],
      durableKeyArgument: null,
      correlationWindow: { kind: 'duration', ms: 300_000 },
      redeliveryGraceMs: 60_000,
      approval: 'none',
      statusQuery: null,
      marker: null,
      limits: { responseBytes: 1_048_576, connectTimeoutMs: 5_000, responseTimeoutMs: 30_000 },
      source: { file: FILE, path: 'tools[0]', line: 3, column: 5 },
    });
  });

  it('given every optional field, when parsed, then each is normalised', () => {
    const tool = toolOf(
      file(
        httpTool({
          title: 'title: Set config',
          credential_ref: 'credential_ref: demo-writer',
          http: [
            'http:',
            '  method: PUT',
            '  url: http://127.0.0.1:8790/config/{{args.name}}',
            '  headers: { Content-Type: application/json, X-Request: "{{execution.id}}" }',
            '  body: { value: "{{args.value}}", n: 3 }',
            '  idempotency_header: Idempotency-Key',
          ].join('\n'),
          fingerprint: 'fingerprint: { exclude: [value] }',
          secret_arguments: 'secret_arguments: [value]',
          durable_key_argument: 'durable_key_argument: name',
          correlation_window: 'correlation_window: 1h30m',
          redelivery_grace: 'redelivery_grace: 0',
          approval: 'approval: per_use',
          limits: 'limits: { response_bytes: 512KiB, connect_timeout: 500ms, response_timeout: 2m }',
        }),
      ),
    );
    expect(tool.title).toBe('Set config');
    expect(tool.credentialRef).toBe('demo-writer');
    expect(tool.request).toEqual({
      kind: 'http',
      method: 'PUT',
      url: 'http://127.0.0.1:8790/config/{{args.name}}',
      headers: { 'Content-Type': 'application/json', 'X-Request': '{{execution.id}}' },
      body: { value: '{{args.value}}', n: 3 },
      idempotencyHeader: 'Idempotency-Key',
    });
    expect(tool.fingerprint.exclude).toEqual(['value']);
    expect(tool.secretArguments).toEqual(['value']);
    expect(tool.durableKeyArgument).toBe('name');
    expect(tool.correlationWindow).toEqual({ kind: 'duration', ms: 5_400_000 });
    expect(tool.redeliveryGraceMs).toBe(0);
    expect(tool.approval).toBe('per_use');
    expect(tool.limits).toEqual({ responseBytes: 524_288, connectTimeoutMs: 500, responseTimeoutMs: 120_000 });
  });

  it.each([
    ['read_only', 0],
    ['idempotent_write', 60_000],
    ['irreversible', null],
  ] as const)('given a %s tool without redelivery_grace, when parsed, then the class default applies', (operationClass, grace) => {
    expect(toolOf(file(httpTool({ class: `class: ${operationClass}` }))).redeliveryGraceMs).toBe(grace);
  });

  it('given correlation_window until_confirmed, when parsed, then the window has no duration', () => {
    expect(toolOf(file(httpTool({ correlation_window: 'correlation_window: until_confirmed' }))).correlationWindow).toEqual({ kind: 'until_confirmed' });
  });

  it('given a conditional write with a status query, when parsed, then the precondition names its argument', () => {
    const tool = toolOf(
      file(
        httpTool({
          class: 'class: conditional_write',
          input_schema: ['input_schema:', '  type: object', '  properties:', '    name: { type: string }', '    value: { type: string }', '    version: { type: integer }'].join('\n'),
          status_query: [
            'status_query:',
            '  http: { url: "http://127.0.0.1:8790/config/{{args.name}}" }',
            '  precondition: { pointer: /version, equals: "{{args.version}}" }',
          ].join('\n'),
        }),
      ),
    );
    expect(tool.statusQuery).toEqual({
      http: { method: 'GET', url: 'http://127.0.0.1:8790/config/{{args.name}}', headers: {} },
      precondition: { pointer: '/version', equals: { kind: 'argument', argument: 'version' } },
    });
  });

  it('given a literal precondition value, when parsed, then it is kept as written', () => {
    const tool = toolOf(
      file(
        httpTool({
          class: 'class: conditional_write',
          status_query: ['status_query:', '  http: { url: "http://127.0.0.1:8790/config" }', '  precondition: { pointer: /state, equals: { open: true } }'].join('\n'),
        }),
      ),
    );
    expect(tool.statusQuery?.precondition.equals).toEqual({ kind: 'literal', value: { open: true } });
  });

  it('given an SSH remote command, when parsed, then port, marker wait and host key are normalised', () => {
    const tool = toolOf(
      file(
        httpTool({
          class: 'class: remote_command',
          channel: 'channel: ssh',
          http: '',
          ssh: [
            'ssh:',
            '  host: 127.0.0.1',
            '  user: oncegate',
            `  host_key: ${HOST_KEY} root@demo`,
            '  cwd: /srv/demo',
            '  argv: [/usr/local/bin/migrate, --to, "{{args.value}}", --retries, 3]',
          ].join('\n'),
          marker: 'marker: { directory: /var/lib/oncegate/markers, written_before_work: true }',
        }),
      ),
    );
    expect(tool.request).toEqual({
      kind: 'ssh',
      host: '127.0.0.1',
      port: 22,
      user: 'oncegate',
      hostKey: HOST_KEY,
      cwd: '/srv/demo',
      argv: ['/usr/local/bin/migrate', '--to', '{{args.value}}', '--retries', '3'],
    });
    expect(tool.marker).toEqual({ directory: '/var/lib/oncegate/markers', writtenBeforeWork: true, startedWaitMs: 5_000 });
  });

  it('given an SSH command working in mktemp-made folders, when parsed, then the random names are not taken for tokens', () => {
    const tool = toolOf(
      file(
        httpTool({
          class: 'class: remote_command',
          channel: 'channel: ssh',
          http: '',
          ssh: [
            'ssh:',
            '  host: 127.0.0.1',
            '  user: oncegate',
            `  host_key: ${HOST_KEY}`,
            '  cwd: /tmp/tmp.Xo8fT3kQ1z/oncegate-work/deploy',
            '  argv: [/tmp/oncegate-ssh-Xo8fT3/bin/run-migration, --log, /tmp/tmp.Xo8fT3kQ1z/oncegate-logs/AbC9]',
          ].join('\n'),
          marker: 'marker: { directory: /tmp/tmp.Xo8fT3kQ1z/oncegate-markers/deploy, written_before_work: true }',
        }),
      ),
    );
    expect(tool.marker?.directory).toBe('/tmp/tmp.Xo8fT3kQ1z/oncegate-markers/deploy');
  });

  it('given a plugin channel, when parsed, then its plugin block is passed through', () => {
    const tool = toolOf(
      file(httpTool({ channel: 'channel: kafka-produce', http: '', plugin: 'plugin: { topic: orders, key: "{{args.name}}", acks: all }' })),
    );
    expect(tool.request).toEqual({ kind: 'plugin', channel: 'kafka-produce', config: { topic: 'orders', key: '{{args.name}}', acks: 'all' } });
  });

  it("given two tools of a plugin channel, when checked, then the second tool's check sees its name, its credential and the first tool's section", () => {
    const seen: unknown[] = [];
    const text = file(
      httpTool({ channel: 'channel: queue', http: '', plugin: 'plugin: { topic: orders }' }),
      httpTool({ name: 'name: set_other', channel: 'channel: queue', http: '', credential_ref: 'credential_ref: queue-writer', plugin: 'plugin: { topic: refunds }' }),
    );
    const result = checkContractFile(text, FILE, { pluginChannels: new Map([['queue', (_section, _report, tool) => void seen.push(tool)]]) });
    expect(result.ok).toBe(true);
    expect(seen).toEqual([
      { operationClass: 'idempotent_write', name: 'set_config', credentialRef: null, earlier: [] },
      { operationClass: 'idempotent_write', name: 'set_other', credentialRef: 'queue-writer', earlier: [{ name: 'set_config', section: { topic: 'orders' } }] },
    ]);
  });

  it('given YAML anchors and merge keys, when parsed, then shared blocks are reused', () => {
    const text = file(
      httpTool({ limits: 'limits: &quick { connect_timeout: 1s, response_timeout: 3s }' }),
      httpTool({ name: 'name: set_other', limits: 'limits: { <<: *quick, response_timeout: 9s }' }),
    );
    const result = checkContractFile(text, FILE);
    expect(result.ok && result.contract.tools.map((tool) => tool.limits)).toEqual([
      { responseBytes: 1_048_576, connectTimeoutMs: 1_000, responseTimeoutMs: 3_000 },
      { responseBytes: 1_048_576, connectTimeoutMs: 1_000, responseTimeoutMs: 9_000 },
    ]);
  });

  it('given an input schema with an $anchor in $defs referenced by $ref, composition and conditional keywords, when parsed, then it is taken and validates', () => {
    const tool = toolOf(
      file(
        httpTool({
          input_schema: [
            'input_schema:',
            '  type: object',
            '  $defs:',
            '    address: { $anchor: addressDef, type: object, properties: { street: { type: string } }, required: [street] }',
            '  properties:',
            '    name: { type: string }',
            '    value: { type: string }',
            '    home: { $ref: "#/$defs/address" }',
            '    work: { $ref: "#addressDef" }',
            '    contactMethod: { type: string, enum: [phone, email] }',
            '    phone: { type: string }',
            '    email: { type: string }',
            '  required: [name, value]',
            '  allOf: [{ anyOf: [{ required: [phone] }, { required: [email] }] }]',
            '  if: { properties: { contactMethod: { const: phone } }, required: [contactMethod] }',
            '  then: { required: [phone] }',
            '  else: { required: [email] }',
          ].join('\n'),
        }),
      ),
    );
    expect(validateArguments(tool, { name: 'a', value: 'b', email: 'x@example.com', home: { street: 'Main' }, work: { street: 'Side' } })).toEqual([]);
    expect(validateArguments(tool, { name: 'a', value: 'b', email: 'x@example.com', work: {} }).map((violation) => violation.pointer)).toContain('/work/street');
    expect(validateArguments(tool, { name: 'a', value: 'b', contactMethod: 'phone', email: 'x@example.com' }).length).toBeGreaterThan(0);
  });

  it('given a parsed contract, when someone tries to change it, then it is frozen', () => {
    const tool = toolOf(file(httpTool()));
    expect(Object.isFrozen(tool)).toBe(true);
    expect(Object.isFrozen(tool.inputSchema['properties'])).toBe(true);
  });
});

describe('a contract file with problems', () => {
  it('given an irreversible tool with a redelivery_grace, when checked, then it is refused: its repeat inside the window is always a retry', () => {
    expect(reasonsOf(file(httpTool({ class: 'class: irreversible', redelivery_grace: 'redelivery_grace: 5m' })))).toEqual([
      'tools[0].redelivery_grace: an irreversible tool answers a repeat inside its correlation window with the stored result, whatever was delivered; ' +
        'remove redelivery_grace (a caller that wants a second execution sends _meta["io.oncegate/new-intent"]: true)',
    ]);
  });

  it('given an empty file, when checked, then it says so at 1:1', () => {
    expect(issuesOf('')).toEqual([{ file: FILE, path: '', line: 1, column: 1, reason: "the file is empty; expected 'version: 1' and a 'tools:' list" }]);
    expect(issuesOf('# only a comment\n')[0]?.reason).toMatch(/the file is empty/);
  });

  it('given a YAML syntax error, when checked, then it is reported with line and column', () => {
    const [issue] = issuesOf('version: 1\ntools:\n  - name: "unterminated\n');
    expect(issue).toMatchObject({ file: FILE, path: '', line: 4, column: 1 });
    expect(issue?.reason).toMatch(/^YAML syntax: /);
  });

  it('given a duplicate key, when checked, then the YAML error names it', () => {
    const [issue] = issuesOf('version: 1\nversion: 1\ntools: []\n');
    expect(issue).toMatchObject({ line: 2, column: 1, reason: 'YAML syntax: Map keys must be unique' });
  });

  it('given a root that is not a mapping, when checked, then it says what it got', () => {
    expect(reasonsOf('- a\n- b\n')).toEqual([': must be a mapping, got a list']);
  });

  it('given no version, a wrong version and an empty tool list, when checked, then each is reported', () => {
    expect(reasonsOf('tools: []\n')).toEqual(["version: missing required field 'version': write 'version: 1' at the top", 'tools: declares no tools']);
    expect(reasonsOf('version: 2\ntools: []\n')[0]).toBe('version: unsupported version 2; this gateway reads version 1');
  });

  it('given a misspelled field, when checked, then the closest field is suggested and not also reported missing', () => {
    const issues = issuesOf(file(httpTool({ correlation_window: 'corelation_window: 5m' })));
    expect(issues).toEqual([
      { file: FILE, path: 'tools[0].corelation_window', line: 18, column: 5, reason: "unknown field 'corelation_window' — did you mean 'correlation_window'?" },
    ]);
  });

  it('given a field written at the wrong level, when checked, then the reason says where it belongs', () => {
    expect(reasonsOf(file(httpTool({ extra: 'idempotency_header: Idempotency-Key' })))).toEqual([
      "tools[0].idempotency_header: unknown field 'idempotency_header' — it belongs inside 'http:'",
    ]);
  });

  it('given problems in several tools, when checked, then all are reported in one pass in file order', () => {
    const issues = issuesOf(file(httpTool({ class: 'class: read-only' }), httpTool({ name: 'name: other', correlation_window: 'correlation_window: 5 minutes' })));
    expect(issues.map((issue) => issue.path)).toEqual(['tools[0].class', 'tools[1].correlation_window']);
    expect(issues[0]?.reason).toBe(
      "'read-only' is not allowed; expected one of: read_only, idempotent_write, conditional_write, irreversible, remote_command — did you mean 'read_only'?",
    );
    expect(issues[1]?.reason).toBe("'5 minutes' is not a duration; write 500ms, 90s, 5m, 2h, 1d, 1h30m, or 0");
  });

  it('given missing required fields, when checked, then each is named at the tool', () => {
    const reasons = reasonsOf(file(httpTool({ description: '', target: '' })));
    expect(reasons).toEqual([
      "tools[0].description: missing required field 'description'",
      "tools[0].target: missing required field 'target': the logical target name recorded with every execution",
    ]);
  });

  it('given wrong types, when checked, then the reason says what was expected and what was found', () => {
    expect(reasonsOf(file(httpTool({ description: 'description: [a, b]', approval: 'approval: 3' })))).toEqual([
      'tools[0].description: must be a string, got a list',
      "tools[0].approval: the number 3 is not allowed; expected one of: none, per_use",
    ]);
  });

  it('given a unitless duration, when checked, then the unit is suggested', () => {
    expect(reasonsOf(file(httpTool({ correlation_window: 'correlation_window: 90' })))).toEqual([
      "tools[0].correlation_window: the number 90 is not a duration; write 500ms, 90s, 5m, 2h, 1d, 1h30m, or 0 — durations need a unit, e.g. '90s'",
    ]);
    expect(reasonsOf(file(httpTool({ correlation_window: 'correlation_window: 0' })))).toEqual(['tools[0].correlation_window: must be longer than 0']);
    expect(reasonsOf(file(httpTool({ correlation_window: 'correlation_window: until_confirm' })))[0]).toMatch(/did you mean 'until_confirmed'\?$/);
  });

  it('given bad and reserved tool names and a duplicate, when checked, then each is refused', () => {
    expect(reasonsOf(file(httpTool({ name: 'name: set config' })))).toEqual([
      "tools[0].name: 'set config' is not a valid MCP tool name: 1 to 64 letters, digits, '_' or '-'",
    ]);
    expect(reasonsOf(file(httpTool({ name: 'name: execution_status' })))).toEqual(["tools[0].name: 'execution_status' is reserved for the gateway's built-in tool"]);
    const [duplicate] = issuesOf(file(httpTool(), httpTool()));
    expect(duplicate).toMatchObject({ path: 'tools[1].name', line: 19, reason: "duplicate tool name 'set_config' (first declared at tools[0], line 3)" });
  });

  it('given an invalid input schema, when checked, then the schema location is named', () => {
    const schema = (lines: string[]): Record<string, string> => ({ input_schema: ['input_schema:', '  type: object', ...lines].join('\n') });
    expect(reasonsOf(file(httpTool(schema(['  properties:', '    name: { type: strng }']))))).toEqual([
      'tools[0].input_schema.properties.name.type: invalid JSON Schema: must be equal to one of the allowed values: array, boolean, integer, null, number, object, string',
    ]);
    expect(reasonsOf(file(httpTool(schema(['  properties:', '    name: { type: string, maxLenght: 3 }', '    value: {}']))))).toEqual([
      "tools[0].input_schema.properties.name.maxLenght: unknown JSON Schema keyword 'maxLenght' — did you mean 'maxLength'?",
    ]);
    expect(reasonsOf(file(httpTool(schema(['  properties:', '    name: { type: string, format: emale }', '    value: {}']))))).toEqual([
      'tools[0].input_schema.properties.name: invalid JSON Schema: unknown format "emale" ignored in schema at path "#/properties/name"',
    ]);
    expect(reasonsOf(file(httpTool({ input_schema: 'input_schema: { type: array }' })))).toEqual([
      "tools[0].input_schema.type: an MCP input schema must have 'type: object'",
    ]);
  });

  it('given an input schema declaring draft-07 (as servers on the v1 MCP SDK list every tool), when checked, then it loads, and arguments are checked by draft-07 rules', () => {
    const draft07 = [
      'input_schema:',
      '  $schema: "http://json-schema.org/draft-07/schema#"',
      '  type: object',
      '  properties:',
      '    name: { type: string }',
      '    value: { type: string }',
      '    version: { type: integer, exclusiveMinimum: 0 }',
      '  required: [name, value]',
      '  additionalProperties: false',
    ].join('\n');
    const tool = toolOf(file(httpTool({ input_schema: draft07 })));
    expect(validateArguments(tool, { name: 'a', value: 'b', version: 1 })).toEqual([]);
    expect(validateArguments(tool, { name: 'a', value: 'b', version: 0 }).map((violation) => [violation.pointer, violation.keyword])).toEqual([['/version', 'exclusiveMinimum']]);
    // A draft-07 keyword misspelled is still named.
    expect(reasonsOf(file(httpTool({ input_schema: draft07.replace('additionalProperties', 'additionalPropertys') })))).toEqual([
      "tools[0].input_schema.additionalPropertys: unknown JSON Schema keyword 'additionalPropertys' — did you mean 'additionalProperties'?",
    ]);
  });

  it('given a default that breaks its own schema or a dotted argument name, when checked, then both are refused', () => {
    const reasons = reasonsOf(
      file(
        httpTool({
          input_schema: [
            'input_schema:',
            '  type: object',
            '  properties:',
            '    name: { type: string }',
            '    value: { type: string, default: 5 }',
            '    "a.b": { type: string }',
          ].join('\n'),
        }),
      ),
    );
    expect(reasons).toEqual([`tools[0].input_schema.properties["a.b"]: argument name 'a.b' must not contain '.': fingerprint paths are dotted`]);
    expect(
      reasonsOf(file(httpTool({ input_schema: ['input_schema:', '  type: object', '  properties:', '    name: { type: string }', '    value: { type: string, default: 5 }'].join('\n') }))),
    ).toEqual(["tools[0].input_schema.properties.value.default: default of 'value' does not match its schema: must be string"]);
  });

  it('given templates that reference undeclared arguments or unknown names, when checked, then each is refused', () => {
    expect(reasonsOf(file(httpTool({ http: 'http: { method: PUT, url: "http://127.0.0.1:8790/config/{{args.nam}}", body: "{{ars.value}}" }' })))).toEqual([
      "tools[0].http.url: '{{args.nam}}' refers to an argument input_schema.properties does not declare — did you mean 'name'?",
      "tools[0].http.body: unknown template '{{ars.value}}'; use {{args.<name>}} or {{execution.id}} — did you mean 'args'?",
    ]);
  });

  it('given credentials written in a contract, when checked, then every form is refused', () => {
    const http = (extra: string): Record<string, string> => ({ http: `http: { method: PUT, url: "http://127.0.0.1:8790/config/{{args.name}}", ${extra} }` });
    expect(reasonsOf(file(httpTool(http('headers: { Authorization: "Bearer abc.def.ghi" }'))))[0]).toBe(
      "tools[0].http.headers.Authorization: header 'Authorization' carries a credential; credentials come by reference only: name the credential in credential_ref and the gateway applies it at dispatch",
    );
    expect(reasonsOf(file(httpTool(http('headers: { Cookie: "{{args.value}}" }'))))[0]).toMatch(/^tools\[0\]\.http\.headers\.Cookie: header 'Cookie' carries a credential/);
    expect(reasonsOf(file(httpTool(http('headers: { X-Api-Key: abc }'))))[0]).toMatch(/header 'X-Api-Key' carries a credential/);
    expect(reasonsOf(file(httpTool(http('body: { note: "sk_live_51Habcdefghijklmnop" }'))))[0]).toMatch(
      /^tools\[0\]\.http\.body\.note: looks like an API secret key written literally; credentials come by reference only/,
    );
    expect(reasonsOf(file(httpTool(http('body: { password: hunter2 }'))))[0]).toMatch(/^tools\[0\]\.http\.body\.password: 'password' holds a literal value/);
    expect(reasonsOf(file(httpTool(http('headers: { X-Trace: "Q2hhbmdlTWUhVGhpc0lzQVJlYWxTZWNyZXQxMjM0NTY3OA" }'))))[0]).toMatch(/looks like a token written literally/);
    expect(reasonsOf(file(httpTool({ http: 'http: { method: GET, url: "https://user:pw@api.example/x" }' })))[0]).toMatch(/the URL must not hold credentials/);
    expect(reasonsOf(file(httpTool({ http: 'http: { method: GET, url: "https://api.example/x?api_key=1" }' })))[0]).toMatch(/query parameter 'api_key' carries a credential/);
    expect(reasonsOf(file(httpTool({ credential_ref: 'credential_ref: "Bearer abcdefghijkl"' })))[0]).toMatch(/credential_ref: must name a credential/);
  });

  it.each([
    ['Host', '"{{args.name}}"'],
    ['host', 'internal.example'],
    ['Transfer-Encoding', 'chunked'],
    ['Content-Length', '"{{args.value}}"'],
    ['Connection', 'close'],
    ['Keep-Alive', 'timeout=5'],
    ['Upgrade', 'websocket'],
    ['TE', 'trailers'],
    ['Trailer', 'X-Checksum'],
    ['Expect', '100-continue'],
    ['Proxy-Connection', 'keep-alive'],
    ['Proxy-Target', '"{{args.name}}"'],
    ['Forwarded', 'host=internal.example'],
    ['X-Forwarded-Host', '"{{args.name}}"'],
    ['X-Original-URL', '/admin'],
    ['X-HTTP-Method-Override', 'DELETE'],
  ])('given a header template that sets %s (hop-by-hop, framing or routing), when checked, then it is refused at its line and path', (name, value) => {
    const text = file(httpTool({ http: ['http:', '  method: PUT', '  url: http://127.0.0.1:8790/config/{{args.name}}', `  headers: { ${name}: ${value} }`].join('\n') }));
    const issues = issuesOf(text);
    expect(issues).toHaveLength(1);
    const key = /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `.${name}` : `["${name}"]`;
    expect(issues[0]).toMatchObject({ file: FILE, path: `tools[0].http.headers${key}`, line: 17 });
    expect(issues[0]!.reason).toMatch(new RegExp(`^header '${name}' .*: the gateway derives it`));
  });

  it('given an idempotency header naming a routing header, when checked, then it is refused too', () => {
    expect(reasonsOf(file(httpTool({ http: 'http: { method: PUT, url: "http://127.0.0.1:8790/config/{{args.name}}", idempotency_header: Host }' })))).toEqual([
      expect.stringMatching(/^tools\[0\]\.http\.idempotency_header: header 'Host' /),
    ]);
  });

  it('given a URL whose host comes from an argument or that carries a secret, when checked, then it is refused', () => {
    expect(reasonsOf(file(httpTool({ http: 'http: { method: GET, url: "http://{{args.name}}/x" }' })))).toEqual([
      'tools[0].http.url: the scheme, host and port must be literal: an argument must not choose where the request goes',
    ]);
    expect(reasonsOf(file(httpTool({ secret_arguments: 'secret_arguments: [name]' })))).toEqual([
      "tools[0].http.url: secret argument 'name' must not appear here: URLs are logged and recorded; send it in the body or a header",
    ]);
    expect(reasonsOf(file(httpTool({ http: 'http: { method: GET, url: "ftp://127.0.0.1/x" }' })))).toEqual([
      "tools[0].http.url: 'ftp:' URLs are not supported; use http:// or https://",
    ]);
  });

  it('given HTTP request mistakes, when checked, then each is named', () => {
    expect(reasonsOf(file(httpTool({ http: 'http: { method: PUTT, url: "http://127.0.0.1/x" }' })))).toEqual([
      "tools[0].http.method: 'PUTT' is not allowed; expected one of: GET, HEAD, POST, PUT, PATCH, DELETE — did you mean 'PUT'?",
    ]);
    expect(reasonsOf(file(httpTool({ http: 'http: { method: GET, url: "http://127.0.0.1/x", body: { a: 1 } }' })))).toEqual([
      'tools[0].http.body: a GET request carries no body',
    ]);
    expect(reasonsOf(file(httpTool({ http: 'http: { method: PUT, url: "http://127.0.0.1/x", headers: { idempotency-key: x }, idempotency_header: Idempotency-Key }' })))).toEqual([
      "tools[0].http.idempotency_header: 'Idempotency-Key' is also set in headers; the gateway sets it to the execution id",
    ]);
  });

  it('given channel and request blocks that do not match, when checked, then the mismatch is named', () => {
    expect(reasonsOf(file(httpTool({ ssh: 'ssh: { host: x }' })))).toEqual(["tools[0].ssh: a 'ssh:' block does not belong to a tool on channel 'http'"]);
    expect(reasonsOf(file(httpTool({ channel: 'channel: HTTP' })))[0]).toBe(
      "tools[0].channel: 'HTTP' is not a channel; expected http, ssh, or a plugin channel name ([a-z][a-z0-9-]*) — did you mean 'http'?",
    );
    expect(reasonsOf(file(httpTool({ channel: 'channel: my-queue' })))).toEqual([
      "tools[0].plugin: missing required field 'plugin' with the settings of plugin channel 'my-queue'",
      "tools[0].http: a 'http:' block does not belong to a tool on channel 'my-queue'",
    ]);
  });

  it('given class-specific blocks in the wrong class or missing, when checked, then each is refused', () => {
    expect(reasonsOf(file(httpTool({ class: 'class: conditional_write' })))).toEqual([
      "tools[0].status_query: missing required field 'status_query': a conditional write needs it to decide whether an unknown outcome took effect",
    ]);
    expect(reasonsOf(file(httpTool({ marker: 'marker: { directory: /m, written_before_work: true }' })))).toEqual([
      'tools[0].marker: only a remote_command has a marker; this tool is idempotent_write',
    ]);
    expect(reasonsOf(file(httpTool({ class: 'class: remote_command', marker: 'marker: { directory: /m, written_before_work: true }' })))).toEqual([
      'tools[0].channel: a remote_command runs on a host and is recovered by probing a marker there: use channel ssh or a plugin channel',
    ]);
  });

  it('given a bad status query, when checked, then its method, pointer and value are checked', () => {
    const reasons = reasonsOf(
      file(
        httpTool({
          class: 'class: conditional_write',
          status_query: ['status_query:', '  http: { method: POST, url: "http://127.0.0.1/x" }', '  precondition: { pointer: version, equals: "v{{args.value}}" }'].join('\n'),
        }),
      ),
    );
    expect(reasons).toEqual([
      "tools[0].status_query.http.method: 'POST' is not allowed; expected one of: GET",
      "tools[0].status_query.precondition.pointer: 'version' is not a JSON pointer; write it like '/version' or '/data/0/etag'",
      'tools[0].status_query.precondition.equals: must be a literal value or exactly one {{args.<name>}}',
    ]);
  });

  it('given SSH command mistakes, when checked, then each is refused with the reason', () => {
    const ssh = (lines: string[]): Record<string, string> => ({
      class: 'class: remote_command',
      channel: 'channel: ssh',
      http: '',
      ssh: ['ssh:', ...lines].join('\n'),
      marker: 'marker: { directory: /var/lib/markers, written_before_work: false, started_wait: 2s }',
    });
    const base = ['  host: 127.0.0.1', '  user: deploy', `  host_key: ${HOST_KEY}`];
    expect(reasonsOf(file(httpTool(ssh([...base, '  argv: [migrate, "--to={{args.value}}"]']))))).toEqual([
      "tools[0].ssh.argv[1]: a template must be a whole argv element, never spliced into '--to={{args.value}}': split it into separate elements",
    ]);
    expect(reasonsOf(file(httpTool(ssh([...base, '  argv: ["{{args.name}}", x]']))))).toEqual(['tools[0].ssh.argv[0]: the program (argv[0]) must be literal']);
    expect(reasonsOf(file(httpTool(ssh([...base, '  argv: [/bin/sh, -c, "{{args.value}}"]']))))).toEqual([
      'tools[0].ssh.argv[2]: argv runs a shell with -c: a template here would be interpolated into a shell string',
    ]);
    expect(reasonsOf(file(httpTool({ ...ssh([...base, '  argv: [migrate, "{{args.value}}"]']), secret_arguments: 'secret_arguments: [value]' })))).toEqual([
      "tools[0].ssh.argv[1]: secret argument 'value' must not appear here: argv is visible in the host's process list; pass it some other way",
    ]);
    expect(reasonsOf(file(httpTool(ssh(['  host: "{{args.name}}"', '  user: deploy', '  host_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDmq', '  cwd: srv', '  argv: [x]']))))).toEqual([
      'tools[0].ssh.host: the host must be literal: an argument must not choose where a command runs',
      "tools[0].ssh.host_key: the key after 'ssh-ed25519' is not a valid ssh-ed25519 public key (truncated or mistyped?)",
      "tools[0].ssh.cwd: 'srv' must be an absolute path",
    ]);
    expect(reasonsOf(file(httpTool(ssh(['  host: h', '  user: deploy', '  host_key: ssh-dss AAAA', '  argv: [x]']))))[0]).toBe(
      "tools[0].ssh.host_key: 'ssh-dss' is not a supported host key type; expected one of: ssh-ed25519, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521, ssh-rsa",
    );
  });

  it('given argument lists naming unknown arguments or a secret durable key, when checked, then each is refused', () => {
    expect(
      reasonsOf(file(httpTool({ fingerprint: 'fingerprint: { exclude: [valeu] }', secret_arguments: 'secret_arguments: [value]', durable_key_argument: 'durable_key_argument: value' }))),
    ).toEqual([
      "tools[0].fingerprint.exclude[0]: 'valeu' is not an argument in input_schema.properties — did you mean 'value'?",
      "tools[0].durable_key_argument: 'value' is a secret argument; a secret must not be the durable key (the key is stored and shown)",
    ]);
    expect(
      reasonsOf(
        file(
          httpTool({
            input_schema: ['input_schema:', '  type: object', '  properties:', '    name: { type: string }', '    value: { type: integer }'].join('\n'),
            durable_key_argument: 'durable_key_argument: value',
          }),
        ),
      ),
    ).toEqual(["tools[0].durable_key_argument: the durable key argument 'value' must be a string argument"]);
  });

  it('given bad limits, when checked, then each limit is named', () => {
    expect(reasonsOf(file(httpTool({ limits: 'limits: { response_bytes: 1GB, connect_timeout: 0, respons_timeout: 1s }' })))).toEqual([
      "tools[0].limits.response_bytes: must be a size between 1 and 64MiB, as bytes or with a unit (B, KB, KiB, MB, MiB), got the string '1GB'",
      'tools[0].limits.connect_timeout: must be longer than 0',
      "tools[0].limits.respons_timeout: unknown field 'respons_timeout' — did you mean 'response_timeout'?",
    ]);
  });
});

describe('a contract file against the published schema (schemas/tools.schema.json)', () => {
  it('given an optional field written without a value, when checked, then it is refused rather than taken as absent', () => {
    expect(reasonsOf(file(httpTool({ title: 'title:' })))).toEqual(['tools[0].title: must be a string, got nothing']);
  });

  it('given a mistake in a block shared through a merge key, when checked, then each tool names it at the line of the shared block', () => {
    const issues = issuesOf(
      file(httpTool({ limits: 'limits: &quick { connect_timeout: soon }' }), httpTool({ name: 'name: set_other', limits: 'limits: { <<: *quick, response_timeout: 9s }' })),
    );
    expect(issues.map(({ path, line, reason }) => ({ path, line, reason }))).toEqual([
      { path: 'tools[0].limits.connect_timeout', line: 19, reason: "'soon' is not a duration; write 500ms, 90s, 5m, 2h, 1d, 1h30m, or 0" },
      { path: 'tools[1].limits.connect_timeout', line: 19, reason: "'soon' is not a duration; write 500ms, 90s, 5m, 2h, 1d, 1h30m, or 0" },
    ]);
  });

  it('given an HTTP method in upper or lower case, when checked, then it is taken; in mixed case, then it is refused as the schema says', () => {
    expect((toolOf(file(httpTool({ http: 'http: { method: get, url: "http://127.0.0.1/x" }' }))).request as { method: string }).method).toBe('GET');
    expect(reasonsOf(file(httpTool({ http: 'http: { method: Put, url: "http://127.0.0.1/x" }' })))).toEqual([
      "tools[0].http.method: 'Put' is not allowed; expected one of: GET, HEAD, POST, PUT, PATCH, DELETE — did you mean 'PUT'?",
    ]);
  });
});

describe('parseContractFile', () => {
  it('given an invalid file, when parsed, then ContractValidationError carries every issue and formats them as lines', () => {
    const text = file(httpTool({ class: 'class: read-only', approval: 'approval: always' }));
    let caught: unknown;
    try {
      parseContractFile(text, FILE);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ContractValidationError);
    const error = caught as ContractValidationError;
    expect(error.code).toBe('contract_invalid');
    expect(error.issues).toHaveLength(2);
    expect(error.format().split('\n')).toEqual([
      "tools.yaml:5:12 tools[0].class: 'read-only' is not allowed; expected one of: read_only, idempotent_write, conditional_write, irreversible, remote_command — did you mean 'read_only'?",
      "tools.yaml:19:15 tools[0].approval: 'always' is not allowed; expected one of: none, per_use",
    ]);
  });

  it('given a valid file, when parsed, then the contract is returned', () => {
    expect(parseContractFile(file(httpTool()), FILE).tools.map((tool) => tool.name)).toEqual(['set_config']);
  });
});
