import { describe, expect, it } from 'vitest';
import { answeredId, SessionDeliveries } from './delivery-evidence';

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

  it('given a response not yet written, when another request arrives, then nothing is proven yet; when the session closes, then it is unproven and says why', async () => {
    const session = new SessionDeliveries('MCP session');
    const watch = session.expect(1, call);
    session.received({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    session.end();
    expect(await watch.settled).toEqual({ kind: 'unproven', reason: 'the MCP session closed before anything proved receipt' });
  });

  it('given the gateway stops watching a connection, then its answers are unproven with the reason it gives', async () => {
    const session = new SessionDeliveries('stdio connection');
    const watch = session.expect(1, call);
    session.written(1);
    session.end('the gateway stopped before anything proved receipt');
    expect(await watch.settled).toEqual({ kind: 'unproven', reason: 'the gateway stopped before anything proved receipt' });
  });

  it('given 1,000 answers awaiting evidence, when one more call arrives, then the oldest is settled as unproven, saying it stopped being watched', async () => {
    const session = new SessionDeliveries('MCP session');
    const oldest = session.expect(0, call);
    for (let id = 1; id < 1_000; id += 1) session.expect(id, call);
    session.expect(1_000, call);
    expect(await oldest.settled).toEqual({ kind: 'unproven', reason: expect.stringMatching(/more than 1000 answers on the same MCP session awaited evidence; the oldest stopped being watched/) });
  });

  it('given an answer awaiting evidence, when a new request reuses its id, then the earlier answer is unproven', async () => {
    const session = new SessionDeliveries('MCP session');
    const earlier = session.expect(7, call);
    session.expect(7, call);
    expect(await earlier.settled).toEqual({ kind: 'unproven', reason: 'a new request with the same id came on the same MCP session before anything proved receipt' });
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
    expect(await watch.settled).toEqual({ kind: 'unproven', reason: 'the same call came again on the same MCP session, which proves nothing either way' });
  });

  it('given a written response, when another call comes, then it is delivered; a call with no name is no repeat of one without a call', async () => {
    const session = new SessionDeliveries('MCP session');
    const watch = session.expect(1, call);
    const bare = session.expect(3, undefined);
    session.stored(1, 'stream-a.1');
    session.stored(3, 'stream-b.1');
    session.streamEnded(1, true);
    session.streamEnded(3, true);
    session.received({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { arguments: {} } });
    expect(await watch.settled).toMatchObject({ kind: 'delivered' });
    expect(await bare.settled).toMatchObject({ kind: 'delivered' });
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

describe('answeredId', () => {
  it('given what the server sends, then a result or an error names the request it answers, and nothing else does', () => {
    expect(answeredId({ jsonrpc: '2.0', id: 7, result: { content: [] } })).toBe(7);
    expect(answeredId({ jsonrpc: '2.0', id: 'a', error: { code: -32602, message: 'Invalid params' } })).toBe('a');
    expect(answeredId({ jsonrpc: '2.0', id: 0, result: {} })).toBe(0);
    expect(answeredId({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })).toBeUndefined();
    expect(answeredId({ jsonrpc: '2.0', id: 3, method: 'sampling/createMessage', params: {} })).toBeUndefined();
    expect(answeredId({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' } })).toBeUndefined();
    expect(answeredId({})).toBeUndefined();
  });
});
