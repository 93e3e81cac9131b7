import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { answeredId, SessionDeliveries } from './delivery-evidence';

/**
 * The SDK's stdio transport for one agent connection, with its delivery evidence: a response counts as received
 * once a later message arrives on the same connection after it was written to stdout (docs/design.md section 5).
 */
export class StdioConnection extends StdioServerTransport {
  readonly deliveries = new SessionDeliveries('stdio connection');

  constructor() {
    super();
    // The SDK's Protocol chains its own handler after this one, so evidence is taken before the message is handled.
    this.onmessage = (message) => {
      this.deliveries.received(message);
      const m = message as { method?: unknown; id?: unknown; params?: { name?: unknown; arguments?: unknown } };
      if (m.method === 'tools/call' && (typeof m.id === 'string' || typeof m.id === 'number')) this.deliveries.expect(m.id, m.params);
    };
  }

  override async send(message: JSONRPCMessage): Promise<void> {
    await super.send(message);
    const answered = answeredId(message);
    if (answered !== undefined) this.deliveries.written(answered);
  }

  override async close(): Promise<void> {
    // Settled before the transport reports itself closed, so the command sees every answer settled when it stops.
    this.deliveries.end();
    await super.close();
  }
}
