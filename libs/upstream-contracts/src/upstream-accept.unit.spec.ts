import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { checkContractFile } from '@oncegate/contracts';
import { definitionDigest } from '@oncegate/mcp-upstream';
import { acceptUpstream } from './upstream-accept';
import { upstreamContractFile } from './upstream-contract-file';
import { UnknownUpstreamToolError, UpstreamContractError } from './upstream-errors';
import { jsonChanges } from './upstream-diff';
import { oncegateToolName, type UpstreamTool } from './upstream-tool-entry';
import { readContractFileTools } from './upstream-tools-in-file';

const LIST: UpstreamTool = { name: 'list', description: 'List.', inputSchema: { type: 'object', properties: { q: { type: 'string' } } }, annotations: { readOnlyHint: true } };
const CLOSE: UpstreamTool = { name: 'close', description: 'Close.', inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }, annotations: { destructiveHint: true } };

/** A hand-written file of the desk's tools in flow style, as an operator might keep it, without a final line break. */
function handWritten(): string {
  return [
    'version: 1',
    'tools:',
    '  - name: desk_list',
    '    description: List.',
    '    class: read_only',
    '    channel: mcp',
    '    target: mcp/desk',
    '    input_schema: { type: object, properties: { q: { type: string } } }   # tight on purpose',
    '    correlation_window: 30s',
    `    plugin: { upstream: desk, url: "http://127.0.0.1:1/mcp", tool: list, definition: "${definitionDigest(LIST)}" }`,
    '  - name: desk_close',
    '    description: Close.',
    '    class: irreversible',
    '    channel: mcp',
    '    target: mcp/desk',
    '    input_schema: { type: object, properties: { id: { type: string } }, required: [id] }',
    '    correlation_window: 1d',
    `    plugin: { upstream: desk, url: "http://127.0.0.1:1/mcp", tool: close, definition: "${definitionDigest(CLOSE)}" }`,
  ].join('\n');
}

const accept = (text: string, live: readonly UpstreamTool[], options: { add?: boolean; remove?: boolean } = {}) =>
  acceptUpstream({ upstream: 'desk', live, files: [readContractFileTools(text, 'desk.yaml', 'desk')], add: options.add ?? false, remove: options.remove ?? false });

describe('accepting an upstream\'s changes into a contract file', () => {
  it('given entries written in flow style, when a schema changes, then that entry\'s schema becomes a block under its key and the file is otherwise untouched', () => {
    const live = { ...LIST, inputSchema: { type: 'object', properties: { q: { type: 'string' }, limit: { type: 'integer' } } } };
    const text = handWritten();
    const result = accept(text, [live, CLOSE]).texts.get('desk.yaml')!;
    const [before, after] = [text.split('\n'), result.split('\n')];
    expect(after.slice(0, 7)).toEqual(before.slice(0, 7));
    expect(after.slice(7, 13)).toEqual(['    input_schema:', '      type: object', '      properties:', '        q:', '          type: string', '        limit:']);
    expect(after.slice(-8)).toEqual(before.slice(-8));
    const entries = (parse(result) as { tools: Array<{ input_schema: unknown; plugin: { definition: string } }> }).tools;
    expect(entries[0]).toMatchObject({ input_schema: live.inputSchema, plugin: { definition: definitionDigest(live) } });
    expect(checkContractFile(result, 'desk.yaml').ok).toBe(true);
  });

  it('given --remove for the last entry of a file without a final line break, then the entry goes and the rest stays', () => {
    const result = accept(handWritten(), [LIST], { remove: true });
    expect(result.lines).toEqual(['removed  desk_close from desk.yaml: the upstream no longer lists close']);
    expect(result.texts.get('desk.yaml')).toBe(`${handWritten().split('\n').slice(0, 10).join('\n')}\n`);
  });

  it('given --add to a file without a final line break, then the new entry starts on a line of its own, at the list\'s indentation', () => {
    const reopen: UpstreamTool = { name: 'reopen', inputSchema: { type: 'object' }, annotations: { idempotentHint: true } };
    const result = accept(handWritten(), [LIST, CLOSE, reopen], { add: true }).texts.get('desk.yaml')!;
    expect(result.startsWith(`${handWritten()}\n  - name: desk_reopen\n`)).toBe(true);
    const checked = checkContractFile(result, 'desk.yaml');
    expect(checked.ok ? checked.contract.tools.map((tool) => [tool.name, tool.operationClass]) : checked.issues).toEqual([
      ['desk_list', 'read_only'],
      ['desk_close', 'irreversible'],
      ['desk_reopen', 'idempotent_write'],
    ]);
  });

  it('given nothing changed, then nothing is written', () => {
    expect(accept(handWritten(), [LIST, CLOSE])).toEqual({ texts: new Map(), lines: [] });
  });
});

describe('the names and files add writes', () => {
  it('given upstream tool names an MCP name cannot hold, too long or taken, then each gets a valid name of its own', () => {
    const taken = new Set(['desk_list']);
    expect(oncegateToolName('desk', 'list', taken)).toBe('desk_list_2');
    expect(oncegateToolName('desk', 'tickets/search.v2', taken)).toBe('desk_tickets_search_v2');
    expect(oncegateToolName('desk', 'x'.repeat(80), new Set())).toBe(`desk_${'x'.repeat(59)}`);
    expect(oncegateToolName('desk', 'x'.repeat(80), new Set([`desk_${'x'.repeat(59)}`]))).toBe(`desk_${'x'.repeat(57)}_2`);
    expect(oncegateToolName('execution', 'status', new Set())).toBe('execution_status_2');
  });

  it('given two upstream tools whose mended names meet, then both are written, under different names', () => {
    const contract = upstreamContractFile({
      upstream: 'desk',
      endpoint: { url: 'http://127.0.0.1:1/mcp' },
      listing: [LIST, { ...LIST, name: 'li.st' }, { ...LIST, name: 'li_st' }],
      file: 'desk.yaml',
      origin: { source: 'http://127.0.0.1:1/mcp', writtenAt: '2026-12-04T10:00:00.000Z' },
    });
    expect(contract.written.map((tool) => tool.name)).toEqual(['desk_list', 'desk_li_st', 'desk_li_st_2']);
    expect(contract.text.startsWith("# Tools of the upstream MCP server 'desk' at http://127.0.0.1:1/mcp,\n# written by `oncegate upstream add` on 2026-12-04T10:00:00.000Z")).toBe(true);
  });
});

describe('what add refuses to write', () => {
  const input = { upstream: 'desk', endpoint: { url: 'http://127.0.0.1:1/mcp' }, file: 'desk.yaml', origin: { source: 'http://127.0.0.1:1/mcp', writtenAt: '2026-12-04T10:00:00.000Z' } };

  it('given an upstream without tools, or only tools the format refuses, then nothing is written and each refusal is named', () => {
    expect(() => upstreamContractFile({ ...input, listing: [] })).toThrow(new UpstreamContractError("the upstream 'desk' lists no tools", []));
    const refused = { ...LIST, inputSchema: { type: 'object', properties: { 'a.b': { type: 'string' } } } };
    let error: unknown;
    try {
      upstreamContractFile({ ...input, listing: [refused] });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(UpstreamContractError);
    expect((error as UpstreamContractError).tools).toEqual([{ upstreamTool: 'list', reasons: [`input_schema.properties["a.b"]: argument name 'a.b' must not contain '.': fingerprint paths are dotted`] }]);
  });

  it('given --class or --only naming a tool the upstream does not list, then the error names it and what the upstream lists', () => {
    expect(() => upstreamContractFile({ ...input, listing: [LIST, CLOSE], only: ['list', 'lsit'] })).toThrow(
      new UnknownUpstreamToolError('--only', ['lsit'], ['list', 'close']),
    );
    expect(new UnknownUpstreamToolError('--only', ['lsit'], ['list', 'close']).message).toBe("--only names a tool the upstream does not list: 'lsit' (it lists list, close)");
  });
});

describe('how a schema changed, as a person reads it', () => {
  it('given members added, removed and changed at any depth, then one line each at its JSON pointer; a list is compared whole', () => {
    const before = { type: 'object', properties: { a: { type: 'string' }, 'b/c': { type: 'integer' } }, required: ['a'] };
    const after = { type: 'object', properties: { a: { type: 'string', maxLength: 5 }, d: { type: 'boolean' } }, required: ['a', 'd'] };
    expect(jsonChanges(before, after)).toEqual([
      { op: '+', pointer: '/properties/a/maxLength', after: 5 },
      { op: '-', pointer: '/properties/b~1c', before: { type: 'integer' } },
      { op: '+', pointer: '/properties/d', after: { type: 'boolean' } },
      { op: '~', pointer: '/required', before: ['a'], after: ['a', 'd'] },
    ]);
    expect(jsonChanges({ b: 1, a: [1, 2] }, { a: [1, 2], b: 1 })).toEqual([]);
  });
});
