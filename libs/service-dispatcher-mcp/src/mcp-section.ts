import type { PluginSectionCheck, PluginSectionTool } from '@oncegate/dispatcher-kit';
import type { UpstreamSection } from '@oncegate/mcp-upstream';

/** How an upstream is reached: its Streamable HTTP endpoint, or the command the channel starts and talks to over stdio. */
export type UpstreamTransport =
  | { readonly kind: 'http'; readonly url: string }
  | { readonly kind: 'stdio'; readonly command: string; readonly args: readonly string[]; readonly env: Readonly<Record<string, string>>; readonly cwd: string | undefined };

/** A tool's `plugin:` section on the `mcp` channel, as checked (`UPSTREAM_SECTION_SCHEMA`, then `checkMcpSection`). */
export interface McpSection {
  /** The upstream's name: its tools share one connection, or one child process, per dispatcher. */
  readonly upstream: string;
  readonly transport: UpstreamTransport;
  /** The upstream's own name of the tool. */
  readonly tool: string;
  /** The digest of the tool's definition the contract was written against (`definitionDigest`). */
  readonly definition: string;
}

/** The section of an attempt (checked when the contract file was loaded) in the channel's terms. */
export function mcpSection(section: Readonly<Record<string, unknown>>): McpSection {
  const written = section as unknown as UpstreamSection;
  const transport: UpstreamTransport =
    written.url !== undefined
      ? { kind: 'http', url: written.url }
      : { kind: 'stdio', command: written.command![0]!, args: written.command!.slice(1), env: written.env ?? {}, cwd: written.cwd };
  return { upstream: written.upstream, transport, tool: written.tool, definition: written.definition };
}

/**
 * The upstream as a connection sees it, for a session's key and for messages: its url, or its command and folder and
 * the names of its environment's variables (never their values, which may be anything an upstream needs).
 */
export function transportKey(transport: UpstreamTransport): string {
  if (transport.kind === 'http') return `url ${transport.url}`;
  const names = Object.keys(transport.env).sort();
  return `command ${JSON.stringify([transport.command, ...transport.args])}${names.length === 0 ? '' : ` with env ${names.join(', ')}`}${transport.cwd === undefined ? '' : ` in ${transport.cwd}`}`;
}

/** How two tools name one upstream differently, in words that show no value of an environment. */
function difference(upstream: string, first: string, there: UpstreamTransport, here: UpstreamTransport): string {
  if (there.kind === 'stdio' && here.kind === 'stdio' && JSON.stringify([there.command, ...there.args, there.cwd ?? null]) === JSON.stringify([here.command, ...here.args, here.cwd ?? null])) {
    const names = [...new Set([...Object.keys(there.env), ...Object.keys(here.env)])].filter((name) => there.env[name] !== here.env[name]).sort();
    return `upstream '${upstream}' is started for tool ${first} with another env (${names.join(', ')} ${names.length === 1 ? 'differs' : 'differ'})`;
  }
  return `upstream '${upstream}' is ${transportKey(there)} for tool ${first}, here ${transportKey(here)}`;
}

/** Whether two transports are one upstream: the same url, or the same command, environment and folder. */
function sameTransport(a: UpstreamTransport, b: UpstreamTransport): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'http' && b.kind === 'http') return a.url === b.url;
  if (a.kind === 'stdio' && b.kind === 'stdio') {
    return JSON.stringify([a.command, ...a.args, a.cwd ?? null]) === JSON.stringify([b.command, ...b.args, b.cwd ?? null]) && JSON.stringify(sorted(a.env)) === JSON.stringify(sorted(b.env));
  }
  return false;
}

function sorted(env: Readonly<Record<string, string>>): Array<[string, string]> {
  return Object.entries(env).sort(([a], [b]) => a.localeCompare(b));
}

/**
 * What the section's JSON Schema cannot say: a url the channel can reach and that holds no credential, settings that
 * belong to a stdio upstream only, no vault credential for a stdio upstream (the channel hands a credential to a url
 * upstream alone, as `Authorization: Bearer`), every tool naming one upstream naming it alike, and the classes an
 * upstream's tool can be recovered by.
 */
export const checkMcpSection: PluginSectionCheck = (section, report, tool) => {
  const written = section as unknown as UpstreamSection;
  if (written.url !== undefined) {
    if (!URL.canParse(written.url)) {
      report(['url'], `'${written.url}' is not a URL; write e.g. http://127.0.0.1:9100/mcp`);
      return;
    }
    const url = new URL(written.url);
    if (url.username !== '' || url.password !== '') {
      report(['url'], 'the url holds a user name or password: keep the credential in the vault and name it with credential_ref (sent as Authorization: Bearer)');
    }
    for (const field of ['env', 'cwd'] as const) {
      if (written[field] !== undefined) report([field], `'${field}' belongs to a stdio upstream (command); an upstream reached by url is a server of its own`);
    }
  } else if (written.command !== undefined && tool.credentialRef != null) {
    report(['command'], `a stdio upstream takes no vault credential (credential_ref: ${tool.credentialRef}): the channel hands a credential only to an upstream reached by url, as Authorization: Bearer`);
  }
  checkSameUpstream(written, report, tool);
  if (tool.operationClass === 'conditional_write') {
    report(
      [],
      'a conditional_write needs a status query after an unknown outcome, and an upstream MCP server offers none: without the tasks extension it keeps nothing to ask about, ' +
        'and with it the task id is the upstream\'s own, returned only in the answer that was lost; ' +
        'declare the tool irreversible (held for review after an unknown outcome), or idempotent_write when the upstream recognises a call sent again by _meta["io.oncegate/execution-id"]',
    );
  }
};

/** Every tool above this one that names the same upstream must name it alike: they share one connection. */
function checkSameUpstream(written: UpstreamSection, report: Parameters<PluginSectionCheck>[1], tool: PluginSectionTool): void {
  if (written.url === undefined && written.command === undefined) return;
  const here = mcpSection(written as unknown as Record<string, unknown>).transport;
  for (const { name, section } of tool.earlier ?? []) {
    const other = section as unknown as UpstreamSection;
    if (other.upstream !== written.upstream || (other.url === undefined && other.command === undefined)) continue;
    const there = mcpSection(section).transport;
    if (sameTransport(here, there)) continue;
    const field = written.url !== undefined ? 'url' : 'command';
    report(
      [field],
      `${difference(written.upstream, name, there, here)}: ` +
        "the tools of one upstream share one connection (or one child process) and must name it alike; give a different server another 'upstream' name",
    );
    return;
  }
}
