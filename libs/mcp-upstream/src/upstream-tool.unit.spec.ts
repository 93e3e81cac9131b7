import { describe, expect, it } from 'vitest';
import { classFromAnnotations, definitionDigest } from './upstream-tool';

describe('an upstream MCP tool as a contract sees it', () => {
  const tool = { name: 'create_issue', description: 'Create an issue.', inputSchema: { type: 'object', properties: { title: { type: 'string' } } }, annotations: { destructiveHint: false } };

  it('given the same definition with keys in another order or another description, then the same digest', () => {
    const reordered = { annotations: { destructiveHint: false }, inputSchema: { properties: { title: { type: 'string' } }, type: 'object' }, name: 'create_issue', description: 'Opens a new issue.' };
    expect(definitionDigest(reordered)).toBe(definitionDigest(tool));
    expect(definitionDigest(tool)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('given a changed input schema, output schema or annotation, then another digest', () => {
    const digest = definitionDigest(tool);
    expect(definitionDigest({ ...tool, inputSchema: { type: 'object', properties: { title: { type: 'string' }, body: { type: 'string' } } } })).not.toBe(digest);
    expect(definitionDigest({ ...tool, outputSchema: { type: 'object' } })).not.toBe(digest);
    expect(definitionDigest({ ...tool, annotations: { destructiveHint: true } })).not.toBe(digest);
  });

  it('given its annotations, then its class: read-only, idempotent, otherwise irreversible', () => {
    expect(classFromAnnotations({ readOnlyHint: true })).toBe('read_only');
    expect(classFromAnnotations({ readOnlyHint: true, destructiveHint: true })).toBe('read_only');
    expect(classFromAnnotations({ idempotentHint: true })).toBe('idempotent_write');
    expect(classFromAnnotations({ idempotentHint: true, destructiveHint: true })).toBe('idempotent_write');
    expect(classFromAnnotations({ destructiveHint: true })).toBe('irreversible');
    expect(classFromAnnotations({ destructiveHint: false })).toBe('irreversible');
    expect(classFromAnnotations(undefined)).toBe('irreversible');
  });
});
