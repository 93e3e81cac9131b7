import { describe, expect, it } from 'vitest';
import { compileChannelSchema, sectionSchema } from './section-schema';

/** What a section check reports for `section`, as `path: reason` lines. */
function problems(check: ReturnType<typeof sectionSchema>, section: Record<string, unknown>): string[] {
  const found: string[] = [];
  check(section, (path, reason) => found.push(`${path.join('.')}: ${reason}`), { name: 'tool', operationClass: 'read_only', target: 't' } as never);
  return found;
}

describe("the channels' schemas of one process", () => {
  it('given two channels whose schemas declare the same $id, when both are compiled, then each checks its own fields', () => {
    const first = sectionSchema({ $id: 'https://example.test/section', type: 'object', additionalProperties: false, properties: { host: { type: 'string' } } });
    const second = sectionSchema({ $id: 'https://example.test/section', type: 'object', additionalProperties: false, properties: { queue: { type: 'string' } } });
    expect(problems(first, { host: 'a' })).toEqual([]);
    expect(problems(first, { queue: 'b' })).toEqual(["queue: unknown field 'queue'; known fields: host"]);
    expect(problems(second, { queue: 'b' })).toEqual([]);
    expect(problems(second, { host: 'a' })).toEqual(["host: unknown field 'host'; known fields: queue"]);
  });

  it('given two schemas without names, when compiled in the one shared instance, then neither check sees the other', () => {
    const first = sectionSchema({ type: 'object', required: ['host'], properties: { host: { type: 'string' } } });
    const second = sectionSchema({ type: 'object', required: ['queue'], properties: { queue: { type: 'integer' } } });
    expect(problems(first, { host: 'a' })).toEqual([]);
    expect(problems(second, { queue: 1 })).toEqual([]);
    expect(problems(second, { queue: 'x' })).toHaveLength(1);
    expect(problems(first, {})).toHaveLength(1);
  });

  it("given a schema with a default, when compiled for options, then the default is filled in; compiled for a section, then the value stays as given", () => {
    const schema = { type: 'object', properties: { retries: { type: 'integer', default: 3 } } };
    const options: Record<string, unknown> = {};
    expect(compileChannelSchema(schema, { useDefaults: true })(options)).toBe(true);
    expect(options).toEqual({ retries: 3 });
    const section: Record<string, unknown> = {};
    expect(compileChannelSchema(schema)(section)).toBe(true);
    expect(section).toEqual({});
  });

  it('given a schema Ajv cannot read, when compiled, then it throws', () => {
    expect(() => compileChannelSchema({ type: 'object', properties: { host: { type: 'no-such-type' } } })).toThrow();
  });
});
