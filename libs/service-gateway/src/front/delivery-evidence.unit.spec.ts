import { describe, expect, it } from 'vitest';
import { SessionDeliveries } from './delivery-evidence';

const call = { name: 'send_payment', arguments: { payment_reference: 'order-1', amount_cents: 10 } };

describe('delivery evidence on one session', () => {
  it('given a written response, when a later request arrives, then it is delivered with that evidence', async () => {
    const session = new SessionDeliveries('MCP session');
    const watch = session.expect(1, call);
    session.stored(1, 'stream-a.1');
    session.streamEnded(1, true);
    session.received({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(await watch.settled).toEqual({
      kind: 'delivered',
      evidence: 'a later tools/list message on the same MCP session, received after the response was written',
    });
  });

  it('given a response not yet written, when another request arrives, then nothing is proven yet', async () => {
    const session = new SessionDeliveries('MCP session');
    const watch = session.expect(1, call);
    session.received({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    session.end();
    expect(await watch.settled).toEqual({ kind: 'unproven' });
  });

  it('given a written response, when the client cancels the request, then it was not delivered', async () => {
    const session = new SessionDeliveries('MCP session');
    const watch = session.expect(1, call);
    session.stored(1, 'stream-a.1');
    session.streamEnded(1, true);
    session.received({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    expect(await watch.settled).toMatchObject({ kind: 'not_delivered', reason: expect.stringMatching(/cancelled the request after its response was written/) });
  });

  it('given a written response, when the same call comes again, then it is no evidence either way', async () => {
    const session = new SessionDeliveries('MCP session');
    const watch = session.expect(1, call);
    session.stored(1, 'stream-a.1');
    session.streamEnded(1, true);
    session.received({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: call.name, arguments: { amount_cents: 10, payment_reference: 'order-1' } } });
    expect(await watch.settled).toEqual({ kind: 'unproven' });
  });

  it('given a stored response, when a stream resumes at or past its event, then it is delivered; before it, nothing is proven', async () => {
    const session = new SessionDeliveries('MCP session');
    const watch = session.expect('a', call);
    session.stored('a', 'stream-a.3');
    session.resumedAfter('stream-a.2');
    session.resumedAfter('stream-b.9');
    session.resumedAfter('stream-a.3');
    expect(await watch.settled).toEqual({
      kind: 'delivered',
      evidence: "Last-Event-ID stream-a.3 on a resumed stream, at or past the response's event stream-a.3",
    });
  });

  it('given a response stream cut before the response was written, then it was not delivered', async () => {
    const session = new SessionDeliveries('MCP session');
    const watch = session.expect(1, call);
    session.streamEnded(1, false);
    expect(await watch.settled).toEqual({ kind: 'not_delivered', reason: 'the response stream closed before the result was written' });
  });
});
