import { spawn } from 'node:child_process';
import type { OperationClass } from '@oncegate/dispatcher-kit';
import { definitionDigest, type UpstreamToolDefinition } from '@oncegate/mcp-upstream';
import { upstreamTools, type UpstreamVariant } from './upstream-server';
import { upstreamScript } from './upstream-script';

/** The command that starts the test upstream over stdio in `dir` (the `command` of a stdio section). */
export function stdioUpstreamCommand(dir: string, era: 'both' | 'legacy' = 'both'): string[] {
  return [process.execPath, upstreamScript(), '--stdio', '--dir', dir, ...(era === 'legacy' ? ['--era', 'legacy'] : [])];
}

/** How a tool's section reaches the upstream: its url, or the command the channel starts. */
export type UpstreamReach = { readonly url: string } | { readonly command: readonly string[] };

/** One contract tool on the mcp channel, in front of one of the test upstream's tools. */
export interface McpContractTool {
  /** The tool's name in the contract (what the agent calls). */
  readonly name: string;
  /** The upstream's own tool. */
  readonly upstreamTool: string;
  readonly operationClass: OperationClass;
  readonly upstream: string;
  readonly reach: UpstreamReach;
  readonly credentialRef?: string;
  /** `limits:` as YAML flow text; default connect 5 s (a stdio child starts), response 3 s. */
  readonly limits?: string;
  /** The definition the contract was written against: the upstream's `original` one unless said otherwise. */
  readonly variant?: UpstreamVariant;
  readonly approval?: string;
}

/** The digest of one of the test upstream's tools, as `oncegate upstream add` would write it. */
export function upstreamDigest(tool: string, variant: UpstreamVariant = 'original'): string {
  const definition = upstreamTools(variant).find((each) => each.name === tool);
  if (definition === undefined) throw new Error(`the test upstream has no tool ${tool} (${variant})`);
  return definitionDigest(definition as unknown as UpstreamToolDefinition);
}

/** The YAML of contract tools (items of `tools:`) on the mcp channel, written against the test upstream's definitions. */
export function mcpContractTools(tools: readonly McpContractTool[]): string {
  return tools.map(toolYaml).join('\n');
}

/** A whole contract file of `tools`. */
export function mcpContract(tools: readonly McpContractTool[]): string {
  return `version: 1\ntools:\n${mcpContractTools(tools)}\n`;
}

function toolYaml(tool: McpContractTool): string {
  const definition = upstreamTools(tool.variant ?? 'original').find((each) => each.name === tool.upstreamTool);
  if (definition === undefined) throw new Error(`the test upstream has no tool ${tool.upstreamTool}`);
  const reach = 'url' in tool.reach ? `      url: ${JSON.stringify(tool.reach.url)}` : `      command: ${JSON.stringify(tool.reach.command)}`;
  return [
    `  - name: ${tool.name}`,
    `    description: ${JSON.stringify(definition.description ?? tool.name)}`,
    `    class: ${tool.operationClass}`,
    '    channel: mcp',
    `    target: ${tool.upstream}/${tool.upstreamTool}`,
    ...(tool.credentialRef === undefined ? [] : [`    credential_ref: ${tool.credentialRef}`]),
    '    correlation_window: 10m',
    ...(tool.approval === undefined ? [] : [`    approval: ${tool.approval}`]),
    // A stdio upstream is a child the channel starts: on a loaded machine its start alone can take seconds, which a
    // test must not read as a refused connection.
    `    limits: ${tool.limits ?? '{ connect_timeout: 20s, response_timeout: 3s }'}`,
    `    input_schema: ${JSON.stringify(definition.inputSchema)}`,
    '    plugin:',
    `      upstream: ${tool.upstream}`,
    reach,
    `      tool: ${tool.upstreamTool}`,
    `      definition: "${upstreamDigest(tool.upstreamTool, tool.variant ?? 'original')}"`,
  ].join('\n');
}

/** The test upstream over Streamable HTTP as a process of its own (for the end-to-end tests and the benchmark). */
export interface UpstreamProcess {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** Everything it wrote. */
  output(): string;
  /** SIGTERM, and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts the test upstream over HTTP in a process of its own; `token` is handed over in its environment, never its arguments. */
export async function startUpstreamProcess(options: { readonly dir: string; readonly token?: string; readonly era?: 'both' | 'legacy' }): Promise<UpstreamProcess> {
  const args = [upstreamScript(), '--http', '--dir', options.dir, ...(options.token === undefined ? [] : ['--token-env', 'UPSTREAM_TOKEN']), ...(options.era === 'legacy' ? ['--era', 'legacy'] : [])];
  const child = spawn(process.execPath, args, { env: { ...process.env, ...(options.token === undefined ? {} : { UPSTREAM_TOKEN: options.token }) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += String(chunk)));
  child.stderr!.on('data', (chunk) => (output += String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the test upstream did not start:\n${output}`)), 30_000);
    const look = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match === null) return;
      clearTimeout(timer);
      child.stdout!.off('data', look);
      resolve(match[1]!);
    };
    child.stdout!.on('data', look);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the test upstream exited with ${code}:\n${output}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    pid: child.pid!,
    output: () => output,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
