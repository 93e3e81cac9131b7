import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectClient } from '../support/mcp-clients';
import { executionOf } from '../support/scenario';

/** What one try of the agent got back. */
export type AgentAnswer =
  | {
      readonly kind: 'result';
      readonly executionId: string;
      readonly state: string;
      readonly isError: boolean;
      readonly attached: boolean;
      readonly replayed: boolean;
      /** How many gateway (re)starts the campaign had made when the answer arrived. */
      readonly generation: number;
    }
  | { readonly kind: 'error'; readonly code: number | null; readonly message: string; readonly generation: number }
  /** Nothing the agent read: the connection broke, the agent gave up unread, or its patience ran out. */
  | { readonly kind: 'no_answer'; readonly why: string; readonly generation: number };

/**
 * The agent's side of one connection: a fetch that can cut every connection it opened (no MCP cancel, as a
 * network drop), and can read a tools/call answer off the socket and throw it away (an agent that gave up or
 * crashed after the bytes arrived).
 */
export class AgentConnection {
  private readonly open = new Set<AbortController>();
  /** The first tools/call answer is read in full and never handed to the client. */
  swallowCallAnswer = false;
  /** The discarded answer's body, when one was swallowed. */
  swallowed: string | undefined;

  readonly fetch: typeof fetch = async (input, init) => {
    const controller = new AbortController();
    this.open.add(controller);
    const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
    const response = await fetch(input, { ...init, signal });
    const isCall = init?.method === 'POST' && typeof init.body === 'string' && init.body.includes('"tools/call"');
    if (isCall && this.swallowCallAnswer) {
      this.swallowCallAnswer = false;
      this.swallowed = await response.text();
      throw new Error('the agent gave up before reading the answer');
    }
    if (response.body === null) return response;
    // The client keeps waiting when a stream ends without its answer (a killed gateway closes it cleanly);
    // the agent sees the connection close, as a person watching the socket would.
    const watched = new TransformStream<Uint8Array, Uint8Array>();
    const closed = () => this.onClosed?.();
    response.body.pipeTo(watched.writable).then(closed, closed);
    return new Response(watched.readable, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  /** Called when a response stream opened through this connection ends or breaks. */
  onClosed: (() => void) | undefined;

  dropAll(): void {
    for (const controller of this.open) controller.abort(new Error('connection dropped'));
    this.open.clear();
  }
}

/** How long after a response stream closed the agent still waits for the answer it carried to be handled. */
const CLOSED_GRACE_MS = 250;

export interface CallOptions {
  readonly url: string;
  readonly token: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly connection: AgentConnection;
  /** How long the agent waits for an answer before it gives up on this try. */
  readonly patienceMs: number;
  readonly generation: () => number;
}

/**
 * One try: a new connection with the official MCP client, one tools/call, and the agent gives up when the
 * connection breaks (the client reports a broken stream and would wait for its own timeout) or its patience
 * runs out. The client is closed in every case.
 */
export async function callOnce(options: CallOptions): Promise<AgentAnswer> {
  let client: Awaited<ReturnType<typeof connectClient>>['client'];
  try {
    ({ client } = await connectClient(options.url, options.token, { fetch: options.connection.fetch }));
  } catch (error) {
    return { kind: 'no_answer', why: `could not connect: ${(error as Error).message}`, generation: options.generation() };
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const broken = new Promise<string>((resolve) => {
      client.onerror = (error) => resolve(error.message);
      // A stream that ended with the answer resolves the call first; this only wins when no answer came.
      options.connection.onClosed = () => setTimeout(() => resolve('a response stream closed without the answer'), CLOSED_GRACE_MS);
    });
    const patience = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer within ${options.patienceMs} ms`), options.patienceMs);
    });
    const call = client.callTool({ name: options.tool, arguments: options.args }, undefined, { timeout: options.patienceMs + 1_000 });
    const outcome = await Promise.race([
      call.then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      ),
      broken.then((why) => ({ gaveUp: `the connection broke (${why})` })),
      patience.then((why) => ({ gaveUp: why })),
    ]);
    const generation = options.generation();
    if ('result' in outcome) {
      const execution = executionOf(outcome.result);
      return {
        kind: 'result',
        executionId: execution.id,
        state: execution.state,
        isError: outcome.result.isError === true,
        attached: execution.attached,
        replayed: execution.replayed,
        generation,
      };
    }
    if ('error' in outcome) {
      const error = outcome.error;
      // A timeout or a closed connection is the client's own verdict, not an answer from the gateway.
      const clientSide = error instanceof McpError && (error.code === ErrorCode.RequestTimeout || error.code === ErrorCode.ConnectionClosed);
      if (error instanceof McpError && !clientSide) return { kind: 'error', code: error.code, message: error.message, generation };
      return { kind: 'no_answer', why: (error as Error)?.message ?? String(error), generation };
    }
    return { kind: 'no_answer', why: outcome.gaveUp, generation };
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => undefined);
  }
}
