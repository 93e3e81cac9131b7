import { Client, SdkError, SdkErrorCode, SdkHttpError, StreamableHTTPClientTransport, type Tool } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { UpstreamTool } from '@oncegate/upstream-contracts';

/** How the CLI reaches an upstream to read its tools: Streamable HTTP, or a command it starts and stops. */
export type UpstreamReach =
  | { readonly url: string; readonly headers?: Readonly<Record<string, string>> }
  | { readonly command: readonly string[]; readonly env?: Readonly<Record<string, string>>; readonly cwd?: string };

/** What an upstream said of itself and its tools. */
export interface UpstreamListing {
  readonly tools: readonly UpstreamTool[];
  /** The revision negotiated: 2026-07-28 where the server offers it, else 2025-11-25 or earlier. */
  readonly protocolVersion: string | undefined;
  /** `name version`, as the server introduced itself. */
  readonly server: string | undefined;
}

/** The upstream could not be listed: unreachable, refused, not MCP, or a command that did not start or stay up. */
export class UpstreamUnavailableError extends Error {
  readonly code = 'upstream_unavailable' as const;

  constructor(
    message: string,
    /** The HTTP status the upstream answered, when it answered one. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'UpstreamUnavailableError';
  }
}

/** Where the listing stops waiting for an answer (the connection, each page). */
export const LISTING_TIMEOUT_MS = 15_000;
/** Pages read at most: a server whose cursor never ends is not read forever. */
const MAX_PAGES = 1000;

/**
 * The first error along the causes (`cause`, or the SDK's `data.cause`) with a system code (`ECONNREFUSED`,
 * `ENOTFOUND`), else the last one: fetch says only "fetch failed", its cause says why.
 */
function rootCause(error: unknown): { code?: string; message: string; underneath: boolean } {
  let last = error;
  for (let at: unknown = error; at instanceof Error; at = at.cause ?? (at as { data?: { cause?: unknown } }).data?.cause) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return { code, message: at.message, underneath: true };
    last = at;
  }
  return { message: last instanceof Error ? last.message : String(last), underneath: last !== error };
}

const NETWORK_REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused (is the server running?)',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be resolved now',
  ECONNRESET: 'the connection was reset',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
};

/** What went wrong, in one line that names the upstream. */
function unavailable(reach: UpstreamReach, error: unknown, stderr: string, timeoutMs: number): UpstreamUnavailableError {
  const what = 'url' in reach ? reach.url : `'${reach.command.join(' ')}'`;
  if (error instanceof SdkHttpError) {
    const status = error.status;
    if (status === 401 || status === 403) return new UpstreamUnavailableError(`${what} answered HTTP ${status}: it wants a credential it was not given`, status);
    return new UpstreamUnavailableError(`${what} answered HTTP ${status}: is it an MCP endpoint (Streamable HTTP)?`, status);
  }
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) return new UpstreamUnavailableError(`${what} did not answer within ${timeoutMs / 1000} s`);
  const cause = rootCause(error);
  if ('command' in reach) {
    if (cause.code === 'ENOENT') return new UpstreamUnavailableError(`cannot start ${what}: no such command (or no such working directory)`);
    if (cause.code === 'EACCES') return new UpstreamUnavailableError(`cannot start ${what}: not allowed to run it`);
    // Its last line on stderr is usually why it stopped; long lines are cut, the rest is the process's own business.
    const said = stderr.trim().split('\n').at(-1)?.slice(0, 300);
    if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) return new UpstreamUnavailableError(`${what} exited before it listed its tools${said ? `: ${said}` : ''}`);
    return new UpstreamUnavailableError(`${what} did not list its tools: ${cause.message}${said ? ` (it said: ${said})` : ''}`);
  }
  // An error beneath the SDK's is the network's (fetch's own, or the socket's).
  if (cause.underneath) return new UpstreamUnavailableError(`cannot reach ${what}: ${(cause.code === undefined ? undefined : NETWORK_REASONS[cause.code]) ?? cause.message}`);
  return new UpstreamUnavailableError(`cannot list the tools of ${what}: ${cause.message}`);
}

function upstreamToolOf(tool: Tool): UpstreamTool {
  return {
    name: tool.name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
  };
}

/**
 * Connects to an upstream with the official MCP client, reads every page of its `tools/list`, and disconnects (a
 * command it started is stopped). The revision is negotiated: 2026-07-28 where the server offers it, 2025-11-25
 * otherwise.
 *
 * @throws UpstreamUnavailableError saying why in one line
 */
export async function listUpstreamTools(reach: UpstreamReach, timeoutMs = LISTING_TIMEOUT_MS): Promise<UpstreamListing> {
  const client = new Client(
    { name: 'oncegate-upstream', version: '0.1.0' },
    { versionNegotiation: { mode: 'auto', probe: { timeoutMs } }, listMaxPages: MAX_PAGES },
  );
  let stderr = '';
  let transport;
  if ('url' in reach) {
    transport = new StreamableHTTPClientTransport(new URL(reach.url), { requestInit: { headers: { ...reach.headers } } });
  } else {
    const [command = '', ...args] = reach.command;
    transport = new StdioClientTransport({ command, args, ...(reach.env ? { env: { ...reach.env } } : {}), ...(reach.cwd ? { cwd: reach.cwd } : {}), stderr: 'pipe' });
    transport.stderr?.on('data', (chunk: Buffer) => (stderr = `${stderr}${chunk.toString('utf8')}`.slice(-4096)));
  }
  try {
    await client.connect(transport, { timeout: timeoutMs });
    const { tools } = await client.listTools(undefined, { timeout: timeoutMs });
    const server = client.getServerVersion();
    return {
      tools: tools.map(upstreamToolOf),
      protocolVersion: client.getNegotiatedProtocolVersion(),
      server: server === undefined ? undefined : `${server.name} ${server.version}`,
    };
  } catch (error) {
    throw unavailable(reach, error, stderr, timeoutMs);
  } finally {
    await client.close().catch(() => undefined);
  }
}
