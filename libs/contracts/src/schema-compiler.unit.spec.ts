import { describe, expect, it } from 'vitest';
import { compileArgumentSchema } from './schema-compiler';

describe("the tools' argument validators of one process", () => {
  it('given two schemas that declare the same $id, when both are compiled, then each validates its own arguments', () => {
    const first = compileArgumentSchema({ $id: 'https://example.test/args', type: 'object', required: ['host'], properties: { host: { type: 'string' } } });
    const second = compileArgumentSchema({ $id: 'https://example.test/args', type: 'object', required: ['port'], properties: { port: { type: 'integer' } } });
    expect(first({ host: 'a' })).toBe(true);
    expect(first({ port: 1 })).toBe(false);
    expect(second({ port: 1 })).toBe(true);
    expect(second({ host: 'a' })).toBe(false);
  });

  it('given schemas that name nothing, one of them recursive, when compiled one after another, then each keeps validating its own arguments', () => {
    const tree = compileArgumentSchema({
      type: 'object',
      $defs: { node: { type: 'object', properties: { value: { type: 'integer' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } } },
      properties: { root: { $ref: '#/$defs/node' } },
    });
    const others = Array.from({ length: 20 }, (_, n) => compileArgumentSchema({ type: 'object', required: [`field${n}`], properties: { [`field${n}`]: { const: n } } }));
    expect(tree({ root: { value: 1, children: [{ value: 2, children: [{ value: 3 }] }] } })).toBe(true);
    expect(tree({ root: { children: [{ children: [{ value: 'three' }] }] } })).toBe(false);
    expect(tree.errors?.map((error) => error.instancePath)).toEqual(['/root/children/0/children/0/value']);
    others.forEach((validate, n) => {
      expect(validate({ [`field${n}`]: n })).toBe(true);
      expect(validate({ [`field${n}`]: n + 1 })).toBe(false);
    });
  });

  it('given a draft-07 schema and a 2020-12 one, when compiled, then each is read in its own dialect', () => {
    const draft07 = compileArgumentSchema({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }] } } });
    const current = compileArgumentSchema({ type: 'object', properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }] } } });
    expect(draft07({ pair: ['a', 1] })).toBe(true);
    expect(draft07({ pair: [1, 'a'] })).toBe(false);
    expect(current({ pair: ['a', 1] })).toBe(true);
    expect(current({ pair: [1, 'a'] })).toBe(false);
  });
});
