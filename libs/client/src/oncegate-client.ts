import { randomUUID } from 'node:crypto';
import {
  Client,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type OAuthClientProvider,
  type Tool,
} from '@modelcontextprotocol/client';
import pRetry, { AbortError } from 'p-retry';

/** The `_meta` keys the gateway reads (docs/gateway.md). */
const META_IDEMPOTENCY_KEY = 'io.oncegate/idempotency-key';
const META_RUN = 'io.oncegate/run';
/** JSON-RPC code of "storage unavailable": nothing was accepted, the same call may be made again. */
const STORAGE_UNAVAILABLE = -32012;
/**
 * What the client tells the gateway it is when the caller does not say, with the version of the package
 * (libs/client/package.json; a unit test keeps the two equal), so that the gateway's side can tell which release calls.
 */
export const DEFAULT_CLIENT_INFO = { name: 'oncegate-client', version: '0.1.0' } as const;

/** How to reach the gateway and how often to make a lost call again (`OncegateClient.connect`). */
export interface OncegateClientOptions {
  /** The gateway's MCP endpoint, e.g. `http://127.0.0.1:8787/mcp`. */
  readonly url: string | URL;
  /** An agent token (`Authorization: Bearer …`); or `authProvider` for OAuth. */
  readonly token?: string;
  /** The official client's OAuth provider, for a gateway that takes access tokens of an identity provider. */
  readonly authProvider?: OAuthClientProvider;
  /** `auto` (default): 2026-07-28 when the gateway offers it, else 2025-11-25; `legacy`: always 2025-11-25. */
  readonly revision?: 'auto' | 'legacy';
  /** How many times a call lost on the way is made again (default 5). */
  readonly retries?: number;
  /** The pause before the first try again (default 250 ms), doubling with each one after. */
  readonly minRetryDelayMs?: number;
  /** What the client tells the gateway it is (default: `oncegate-client` and this package's version). */
  readonly clientInfo?: { readonly name: string; readonly version: string };
  /** The fetch every request goes through (default: the global one), e.g. to go through a proxy. */
  readonly fetch?: typeof fetch;
  /** Headers added to every request (after `Authorization`, so one here replaces the token's). */
  readonly headers?: Record<string, string>;
}

/** The options of one call (`OncegateClient.callTool`). */
export interface CallOptions {
  /** The caller key of this intent; a new one per call when not given. Give your own to re-issue after a restart. */
  readonly idempotencyKey?: string;
  /** A run id: calls of one run share its session grants (docs/gateway.md). */
  readonly run?: string;
  /** Gives the call up: no try is made after it is aborted, and the attempt in flight is abandoned. */
  readonly signal?: AbortSignal;
  /** Told each step the call waits at (awaiting approval, dispatched, …), as the gateway reports its progress. */
  readonly onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /**
   * How long one attempt waits for its answer before it counts as lost (default: the SDK's 60 s). Keep it above the
   * gateway's `call_wait` (default 20 s): on 2026-07-28 an attempt given up closes its stream, which cancels an
   * execution not yet dispatched (a call waiting for approval), and the next try then starts a new one.
   */
  readonly timeoutMs?: number;
}

/**
 * Whether a failed call may have been lost on the way rather than answered: the connection dropped or was refused,
 * the answer did not come in time, the gateway was unreachable or restarting, or its journal could not be written.
 * A JSON-RPC error of the gateway (invalid arguments, an unknown tool, a key reused for another intent) is an
 * answer and is not.
 */
export function lostOnTheWay(error: unknown): boolean {
  if (error instanceof SdkHttpError) return error.status >= 500 || error.status === 429 || error.status === 408;
  if (error instanceof SdkError) {
    return [SdkErrorCode.ConnectionClosed, SdkErrorCode.SendFailed, SdkErrorCode.RequestTimeout, SdkErrorCode.NotConnected].includes(error.code);
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (code === STORAGE_UNAVAILABLE) return true;
  if (typeof code === 'number') return false;
  const name = (error as { name?: unknown } | null)?.name;
  // fetch's own failures (refused, reset, DNS) and an aborted fetch that the caller did not ask for.
  return error instanceof TypeError || name === 'AbortError' || name === 'TimeoutError' || typeof code === 'string';
}

/** The connection itself is unusable: the SDK closed it, or the gateway no longer knows its session (404). */
function connectionGone(error: unknown): boolean {
  if (error instanceof SdkHttpError) return error.status === 404;
  return error instanceof SdkError && (error.code === SdkErrorCode.ConnectionClosed || error.code === SdkErrorCode.NotConnected);
}

/**
 * The official MCP client with Oncegate's retry discipline: every call carries a caller key
 * (`_meta["io.oncegate/idempotency-key"]`), and a call lost to the network is made again with the same key,
 * on a fresh connection, so it attaches to the execution the first one started and resolves to that execution's
 * answer — never a second effect. It speaks 2026-07-28 or 2025-11-25, as the gateway offers.
 */
export class OncegateClient {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  /** Calls in flight per connection, so a replaced connection is closed only when none is left on it. */
  private readonly inFlight = new Map<Client, number>();
  private readonly retired = new Set<Client>();

  private constructor(private readonly options: OncegateClientOptions) {}

  /** Opens a connection to the gateway (negotiating the revision) and returns the client once it is open. */
  static async connect(options: OncegateClientOptions): Promise<OncegateClient> {
    const client = new OncegateClient(options);
    await client.connected();
    return client;
  }

  /** The protocol revision of the current connection. */
  get protocolVersion(): string | undefined {
    return this.client?.getNegotiatedProtocolVersion();
  }

  /** The tools the gateway offers this agent. */
  async listTools(): Promise<Tool[]> {
    return (await (await this.connected()).listTools()).tools;
  }

  /**
   * Calls a tool; a call lost on the way is made again with the same caller key (up to `retries` times), and the
   * answer is the execution's: `structuredContent.execution.attached` says when it came from an earlier attempt.
   */
  async callTool(name: string, args: Record<string, unknown>, options: CallOptions = {}): Promise<CallToolResult> {
    const key = options.idempotencyKey ?? randomUUID();
    const meta = { [META_IDEMPOTENCY_KEY]: key, ...(options.run === undefined ? {} : { [META_RUN]: options.run }) };
    return pRetry(
      async () => {
        const client = await this.connected();
        this.inFlight.set(client, (this.inFlight.get(client) ?? 0) + 1);
        try {
          return (await client.callTool(
            { name, arguments: args, _meta: meta },
            {
              ...(options.signal ? { signal: options.signal } : {}),
              ...(options.onprogress ? { onprogress: options.onprogress } : {}),
              ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
            },
          )) as CallToolResult;
        } catch (error) {
          if (options.signal?.aborted || !lostOnTheWay(error)) throw new AbortError(error as Error);
          // A connection the SDK itself gave up (or a session the gateway no longer knows) is replaced for the next
          // try. It is not closed under the caller's other calls: on 2026-07-28 closing their streams would cancel them.
          if (connectionGone(error)) this.replace(client);
          throw error;
        } finally {
          this.inFlight.set(client, (this.inFlight.get(client) ?? 1) - 1);
        }
      },
      {
        retries: this.options.retries ?? 5,
        minTimeout: this.options.minRetryDelayMs ?? 250,
        factor: 2,
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
  }

  /** Closes the connection, and those replaced earlier whose calls are still in flight. */
  async close(): Promise<void> {
    await this.disconnect();
    await Promise.all([...this.retired].map((client) => client.close().catch(() => undefined)));
    this.retired.clear();
  }

  /** Opens a new connection for the calls to come; the old one is closed once its calls in flight are done. */
  private replace(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.retired.add(client);
    void this.whenIdle(client).then(() => {
      this.retired.delete(client);
      return client.close().catch(() => undefined);
    });
  }

  private async whenIdle(client: Client): Promise<void> {
    while ((this.inFlight.get(client) ?? 0) > 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }

  private async connected(): Promise<Client> {
    if (this.client !== undefined) return this.client;
    this.connecting ??= this.open().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async open(): Promise<Client> {
    const { url, token, authProvider, headers, fetch, clientInfo, revision = 'auto' } = this.options;
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }), ...headers } },
      ...(authProvider ? { authProvider } : {}),
      ...(fetch ? { fetch } : {}),
    });
    const client = new Client(clientInfo ?? DEFAULT_CLIENT_INFO, { versionNegotiation: { mode: revision === 'auto' ? 'auto' : 'legacy' } });
    await client.connect(transport);
    this.client = client;
    return client;
  }

  private async disconnect(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }
}
