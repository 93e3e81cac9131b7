import { describe, expect, it } from 'vitest';
import { storedAnswer } from './call-result';

describe("an upstream's tools/call result, as the agent reads it through the gateway", () => {
  it('given text blocks only, then their text, one after another, as text', () => {
    expect(storedAnswer({ content: [{ type: 'text', text: 'the limit is now 300' }, { type: 'text', text: 'effective at once' }] })).toEqual({
      body: 'the limit is now 300\neffective at once',
      contentType: 'text/plain; charset=utf-8',
    });
  });

  it('given structured content that its text block repeats, then the structured content itself, as JSON (the gateway carries it as structuredContent.response)', () => {
    const balance = { account: 'acct-1', cents: 10_000 };
    expect(storedAnswer({ content: [{ type: 'text', text: JSON.stringify(balance, null, 2) }], structuredContent: balance })).toEqual({ body: JSON.stringify(balance), contentType: 'application/json' });
  });

  it('given structured content and a text that says something else, then both, as the result in JSON', () => {
    const result = { content: [{ type: 'text' as const, text: 'Balance read.' }], structuredContent: { cents: 5 } };
    expect(JSON.parse(storedAnswer(result).body)).toEqual({ content: result.content, structuredContent: { cents: 5 } });
  });

  it('given an image or a resource among the blocks, then the whole result as JSON: nothing the upstream answered is dropped', () => {
    const content = [
      { type: 'text' as const, text: 'the chart' },
      { type: 'image' as const, data: 'iVBORw0KGgo=', mimeType: 'image/png' },
    ];
    expect(storedAnswer({ content })).toEqual({ body: JSON.stringify({ content }), contentType: 'application/json' });
  });

  it('given no content at all, then an empty text', () => {
    expect(storedAnswer({ content: [] })).toEqual({ body: '', contentType: 'text/plain; charset=utf-8' });
  });
});
