import { isDeepStrictEqual } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/client';

/** What an upstream's answer becomes in the journal: the body the agent reads, and how the gateway reads it. */
export interface StoredAnswer {
  readonly body: string;
  readonly contentType: string;
}

type ContentBlock = CallToolResult['content'][number];

/**
 * How an upstream's `tools/call` result is kept as the result the agent reads (docs/dispatchers.md, the MCP channel).
 * The gateway answers with one text block (its own headline, then this body) and, when the body is JSON, the body
 * parsed under `structuredContent.response`; so:
 *
 * - text blocks only, no structured content: the texts, one after another (`text/plain`);
 * - structured content whose text blocks only repeat it (MCP asks a server to mirror it so): the structured content
 *   itself (`application/json`), which the agent gets back as `structuredContent.response`;
 * - anything else (images, audio, resources, or text that says more than the structured content): the result as JSON,
 *   `{ content, structuredContent? }`, so that nothing the upstream answered is dropped.
 */
export function storedAnswer(result: CallToolResult): StoredAnswer {
  const blocks: readonly ContentBlock[] = result.content ?? [];
  const texts = blocks.every((block) => block.type === 'text') ? blocks.map((block) => (block as { text: string }).text) : undefined;
  const structured = result.structuredContent;
  if (texts !== undefined && structured === undefined) return { body: texts.join('\n'), contentType: 'text/plain; charset=utf-8' };
  if (texts !== undefined && texts.every((text) => repeats(text, structured))) return { body: JSON.stringify(structured), contentType: 'application/json' };
  return { body: JSON.stringify({ content: blocks, ...(structured === undefined ? {} : { structuredContent: structured }) }), contentType: 'application/json' };
}

/** Whether a text block is the structured content serialised (whatever its spacing). */
function repeats(text: string, structured: unknown): boolean {
  try {
    return isDeepStrictEqual(JSON.parse(text), structured);
  } catch {
    return false;
  }
}
