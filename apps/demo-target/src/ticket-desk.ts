import { createHash } from 'node:crypto';
import { createMcpHandler, fromJsonSchema, McpServer, type CallToolResult, type McpHttpHandler } from '@modelcontextprotocol/server';

/**
 * The demo's upstream MCP server: a ticket desk on the official SDK, served by the demo target at `/mcp` (Streamable
 * HTTP; 2026-07-28, and 2025-11-25 without sessions). Its three tools are one of each class an upstream tool gets from
 * its annotations: `list_tickets` reads, `set_ticket_priority` sets a state (a repeat changes nothing), and
 * `close_ticket` is destructive — every call sends the reporter a closing notice, so a call made twice is two notices.
 * Each call is recorded beside the demo target's HTTP requests, with whether it had an effect.
 */

export interface Ticket {
  readonly id: string;
  readonly title: string;
  status: 'open' | 'closed';
  priority: Priority;
  resolution: string | null;
}

const PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
type Priority = (typeof PRIORITIES)[number];

/** One tool call the desk received, as the demo target records it. */
export interface DeskCall {
  readonly tool: string;
  /** SHA-256 (hex) of the call's `Authorization` header, `null` without one: which credential came, never the credential. */
  readonly authorizationSha256: string | null;
  readonly effect: boolean;
  /** Whether the desk answered with an error (an unknown ticket). */
  readonly isError: boolean;
}

/** The desk's tools that can change something, as their calls are keyed in the effect log (`MCP <tool>`). */
export const DESK_EFFECT_ENDPOINTS = ['MCP set_ticket_priority', 'MCP close_ticket'] as const;

const TICKET_ID = { type: 'string', pattern: '^T-[0-9]+$', description: 'The ticket, e.g. T-1.' } as const;

function seed(): Map<string, Ticket> {
  return new Map(
    [
      { id: 'T-1', title: 'Printer on the third floor jams on every job', status: 'open', priority: 'normal', resolution: null },
      { id: 'T-2', title: 'VPN drops every 20 minutes', status: 'open', priority: 'high', resolution: null },
      { id: 'T-3', title: 'New starter needs a laptop', status: 'open', priority: 'low', resolution: null },
    ].map((ticket) => [ticket.id, ticket as Ticket]),
  );
}

function answer(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

function noTicket(id: string): CallToolResult {
  return { content: [{ type: 'text', text: `no ticket ${id} on this desk` }], isError: true };
}

export class TicketDesk {
  private tickets = seed();
  readonly handler: McpHttpHandler;

  /** `record` is told every tool call; `http://…/mcp` requests go to `handler.fetch`. */
  constructor(private readonly record: (call: DeskCall) => void) {
    this.handler = createMcpHandler((context) => this.server(context.requestInfo?.headers.get('authorization') ?? null));
  }

  /** The tickets as they are now. */
  list(): Ticket[] {
    return [...this.tickets.values()].map((ticket) => ({ ...ticket }));
  }

  /** Back to the three open tickets the desk starts with. */
  reset(): void {
    this.tickets = seed();
  }

  /** A server for one request: its calls are recorded with the request's credential, hashed. */
  private server(authorization: string | null): McpServer {
    const authorizationSha256 = authorization === null ? null : createHash('sha256').update(authorization).digest('hex');
    const recorded = (tool: string, effect: boolean, result: CallToolResult): CallToolResult => {
      this.record({ tool, authorizationSha256, effect, isError: result.isError === true });
      return result;
    };
    const server = new McpServer({ name: 'oncegate-demo-desk', version: '1.0.0' }, { instructions: 'The demo ticket desk of the Oncegate walkthrough.' });
    server.registerTool(
      'list_tickets',
      {
        title: 'List tickets',
        description: 'List the tickets of the desk with their status and priority, optionally only the open or the closed ones.',
        inputSchema: fromJsonSchema({ type: 'object', properties: { status: { type: 'string', enum: ['open', 'closed'], description: 'Only tickets with this status.' } }, additionalProperties: false }),
        annotations: { readOnlyHint: true },
      },
      async (args) => {
        const { status } = args as { status?: string };
        const tickets = this.list().filter((ticket) => status === undefined || ticket.status === status);
        return recorded('list_tickets', false, answer(tickets.map((t) => `${t.id} [${t.status}, ${t.priority}] ${t.title}`).join('\n') || 'no tickets', { tickets }));
      },
    );
    server.registerTool(
      'set_ticket_priority',
      {
        title: "Set a ticket's priority",
        description: 'Set the priority of a ticket. Setting the priority it already has changes nothing.',
        inputSchema: fromJsonSchema({
          type: 'object',
          properties: { ticket_id: TICKET_ID, priority: { type: 'string', enum: [...PRIORITIES] } },
          required: ['ticket_id', 'priority'],
          additionalProperties: false,
        }),
        annotations: { idempotentHint: true, destructiveHint: false },
      },
      async (args) => {
        const { ticket_id: id, priority } = args as { ticket_id: string; priority: Priority };
        const ticket = this.tickets.get(id);
        if (ticket === undefined) return recorded('set_ticket_priority', false, noTicket(id));
        const changed = ticket.priority !== priority;
        ticket.priority = priority;
        return recorded('set_ticket_priority', changed, answer(`${id} is ${priority}${changed ? '' : ' (it was already)'}`, { ticket: { ...ticket }, changed }));
      },
    );
    server.registerTool(
      'close_ticket',
      {
        title: 'Close a ticket',
        description: 'Close a ticket with a resolution and send its reporter the closing notice. Every call sends a notice, also for a ticket already closed.',
        inputSchema: fromJsonSchema({
          type: 'object',
          properties: { ticket_id: TICKET_ID, resolution: { type: 'string', minLength: 1, maxLength: 500, description: 'What was done, for the reporter.' } },
          required: ['ticket_id', 'resolution'],
          additionalProperties: false,
        }),
        annotations: { destructiveHint: true },
      },
      async (args) => {
        const { ticket_id: id, resolution } = args as { ticket_id: string; resolution: string };
        const ticket = this.tickets.get(id);
        if (ticket === undefined) return recorded('close_ticket', false, noTicket(id));
        const already = ticket.status === 'closed';
        ticket.status = 'closed';
        ticket.resolution = resolution;
        return recorded('close_ticket', true, answer(`${id} closed; notice sent to its reporter${already ? ' (again: it was closed already)' : ''}`, { ticket: { ...ticket } }));
      },
    );
    return server;
  }
}
