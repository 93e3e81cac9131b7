import { describe, expect, it } from 'vitest';
import { checkContractFile } from '@oncegate/contracts';
import { hostingOf } from '@oncegate/dispatcher-kit/host';
import { mcpKit } from './mcp-channel';

const DIGEST = `sha256:${'a'.repeat(64)}`;

/** A contract tool on the mcp channel with `plugin` (YAML flow text) and extra top-level lines. */
function tool(name: string, plugin: string, extra: string[] = []): string {
  return [
    `  - name: ${name}`,
    '    description: A tool of an upstream MCP server.',
    '    class: idempotent_write',
    '    channel: mcp',
    '    target: ledger/limits',
    '    correlation_window: 5m',
    '    input_schema: { type: object, properties: { account: { type: string } } }',
    ...extra,
    `    plugin: ${plugin}`,
  ].join('\n');
}

/** Each problem of a contract file, as `path: reason`, when checked as a process hosting the mcp channel checks it. */
function problems(...tools: string[]): string[] {
  const result = checkContractFile(`version: 1\ntools:\n${tools.join('\n')}\n`, 'tools.yaml', { pluginChannels: hostingOf(mcpKit).service.pluginChannels! });
  return result.ok ? [] : result.issues.map((issue) => `${issue.path}: ${issue.reason}`);
}

describe('the mcp channel checks its sections when the contract file is loaded', () => {
  it('given a url upstream and a stdio upstream written right, then both are accepted', () => {
    expect(problems(tool('set_limit', `{ upstream: ledger, url: "http://127.0.0.1:9100/mcp", tool: set_limit, definition: "${DIGEST}" }`, ['    credential_ref: ledger-token']))).toEqual([]);
    expect(problems(tool('set_limit', `{ upstream: ledger, command: [node, server.js], env: { LEDGER_MODE: test }, cwd: /srv/ledger, tool: set_limit, definition: "${DIGEST}" }`))).toEqual([]);
  });

  it('given neither a url nor a command, then the section is refused saying which fields it lacks', () => {
    expect(problems(tool('set_limit', `{ upstream: ledger, tool: set_limit, definition: "${DIGEST}" }`))).toEqual(
      expect.arrayContaining(["tools[0].plugin.url: missing required field 'url'", "tools[0].plugin.command: missing required field 'command'"]),
    );
  });

  it('given a url with a password in it, then it is refused: the credential belongs in the vault', () => {
    expect(problems(tool('set_limit', `{ upstream: ledger, url: "http://ops:hunter2@127.0.0.1:9100/mcp", tool: set_limit, definition: "${DIGEST}" }`))).toEqual([
      'tools[0].plugin.url: the url holds a user name or password: keep the credential in the vault and name it with credential_ref (sent as Authorization: Bearer)',
    ]);
  });

  it("given a url upstream with env or cwd, then they are refused: they belong to a child the channel starts", () => {
    expect(problems(tool('set_limit', `{ upstream: ledger, url: "http://127.0.0.1:9100/mcp", env: { A: b }, tool: set_limit, definition: "${DIGEST}" }`))).toEqual([
      "tools[0].plugin.env: 'env' belongs to a stdio upstream (command); an upstream reached by url is a server of its own",
    ]);
  });

  it('given a stdio upstream whose tool names a vault credential, then it is refused', () => {
    expect(problems(tool('set_limit', `{ upstream: ledger, command: [node, server.js], tool: set_limit, definition: "${DIGEST}" }`, ['    credential_ref: ledger-token']))).toEqual([
      'tools[0].plugin.command: a stdio upstream takes no vault credential (credential_ref: ledger-token): the channel hands a credential only to an upstream reached by url, as Authorization: Bearer',
    ]);
  });

  it('given two tools naming one upstream at two urls, then the second is refused, naming the first', () => {
    const found = problems(
      tool('set_limit', `{ upstream: ledger, url: "http://127.0.0.1:9100/mcp", tool: set_limit, definition: "${DIGEST}" }`),
      tool('read_limit', `{ upstream: ledger, url: "http://127.0.0.1:9200/mcp", tool: read_limit, definition: "${DIGEST}" }`),
    );
    expect(found).toEqual([
      "tools[1].plugin.url: upstream 'ledger' is url http://127.0.0.1:9100/mcp for tool set_limit, here url http://127.0.0.1:9200/mcp: the tools of one upstream share one connection (or one child process) and must name it alike; give a different server another 'upstream' name",
    ]);
  });

  it('given two tools naming one stdio upstream with different environments, then the second is refused without showing the values', () => {
    const found = problems(
      tool('set_limit', `{ upstream: ledger, command: [node, server.js], env: { LEDGER_MODE: live-one }, tool: set_limit, definition: "${DIGEST}" }`),
      tool('read_limit', `{ upstream: ledger, command: [node, server.js], env: { LEDGER_MODE: live-two }, tool: read_limit, definition: "${DIGEST}" }`),
    );
    expect(found).toHaveLength(1);
    expect(found[0]).toContain("tools[1].plugin.command: upstream 'ledger' is started for tool set_limit with another env (LEDGER_MODE differs)");
    expect(found[0]).not.toContain('live-');
  });

  it('given a conditional_write tool, then it is refused with why and what to declare instead', () => {
    const conditional = tool('set_limit', `{ upstream: ledger, url: "http://127.0.0.1:9100/mcp", tool: set_limit, definition: "${DIGEST}" }`).replace('class: idempotent_write', 'class: conditional_write');
    expect(problems(conditional)).toEqual([
      'tools[0].plugin: channel mcp recovers read_only, idempotent_write, irreversible calls; class conditional_write is not one of them',
      expect.stringMatching(/^tools\[0\]\.plugin: a conditional_write needs a status query after an unknown outcome, and an upstream MCP server offers none: .*declare the tool irreversible/),
    ]);
  });
});
