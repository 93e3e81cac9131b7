import { describe, expect, it } from 'vitest';
import { SchemaConverter } from './json-schema-conversion';

const convert30 = (schema: unknown, request = false) => {
  const converter = new SchemaConverter('3.0', {});
  return { schema: converter.convert(schema, request), notes: converter.notes(), defs: converter.defs() };
};

describe('OpenAPI schemas as JSON Schema 2020-12', () => {
  it('given 3.0 nullable, when converted, then null joins the type, the enum, or a composition', () => {
    expect(convert30({ type: 'string', nullable: true }).schema).toEqual({ type: ['string', 'null'] });
    expect(convert30({ type: 'string', enum: ['a', 'b'], nullable: true }).schema).toEqual({ type: ['string', 'null'], enum: ['a', 'b', null] });
    expect(convert30({ allOf: [{ type: 'object' }], nullable: true }).schema).toEqual({ anyOf: [{ allOf: [{ type: 'object' }] }, { type: 'null' }] });
    expect(convert30({ type: 'string', nullable: false }).schema).toEqual({ type: 'string' });
  });

  it('given 3.0 boolean exclusive bounds, when converted, then they become the numeric bounds and the inclusive ones go', () => {
    expect(convert30({ type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: false }).schema).toEqual({ type: 'number', exclusiveMinimum: 0, maximum: 10 });
  });

  it('given 3.1 numeric exclusive bounds and type lists, when converted, then they stay as they are', () => {
    const converter = new SchemaConverter('3.1', {});
    expect(converter.convert({ type: ['integer', 'null'], exclusiveMinimum: 0, nullable: true }, false)).toEqual({ type: ['integer', 'null'], exclusiveMinimum: 0 });
    expect(converter.notes()).toEqual(["schema keywords left out (not JSON Schema 2020-12): 'nullable'"]);
  });

  it('given example, extensions and documentation keywords, then example becomes examples and the others are left out, discriminator said', () => {
    const { schema, notes } = convert30({
      type: 'object',
      example: { a: 1 },
      'x-internal': true,
      xml: { name: 'thing' },
      externalDocs: { url: 'https://docs.example' },
      discriminator: { propertyName: 'kind' },
      oneOf: [{ type: 'object' }],
    });
    expect(schema).toEqual({ type: 'object', examples: [{ a: 1 }], oneOf: [{ type: 'object' }] });
    expect(notes).toEqual(["'discriminator' left out: the oneOf/anyOf it annotates still decides which schema a value matches"]);
  });

  it('given formats, patterns and keywords the contract check does not take, then they are left out and listed', () => {
    const { schema, notes } = convert30({
      type: 'object',
      properties: {
        size: { type: 'integer', format: 'int64' },
        email: { type: 'string', format: 'email' },
        code: { type: 'string', pattern: '^[\\w-\\.]+$' },
        name: { type: 'string', pattern: '^[a-z]+$', maxLenght: 3 },
      },
    });
    expect(schema).toEqual({
      type: 'object',
      properties: { size: { type: 'integer' }, email: { type: 'string', format: 'email' }, code: { type: 'string' }, name: { type: 'string', pattern: '^[a-z]+$' } },
    });
    expect(notes).toEqual([
      "formats the contract does not check, left out of the schema: 'int64'",
      "schema keywords left out (not JSON Schema 2020-12): 'maxLenght'",
      "patterns left out (not valid regular expressions in Unicode mode, as the gateway compiles them): '^[\\w-\\.]+$'",
    ]);
  });

  it('given a request body with read-only properties, then they and their required entry are left out, nested ones too', () => {
    const body = {
      type: 'object',
      required: ['id', 'name'],
      properties: {
        id: { type: 'string', readOnly: true },
        name: { type: 'string' },
        owner: { type: 'object', properties: { createdAt: { type: 'string', readOnly: true }, email: { type: 'string' } } },
      },
    };
    const { schema, notes } = convert30(body, true);
    expect(schema).toEqual({ type: 'object', required: ['name'], properties: { name: { type: 'string' }, owner: { type: 'object', properties: { email: { type: 'string' } } } } });
    expect(notes).toEqual(["read-only properties left out of the request body (the server sets them): 'id', 'owner.createdAt'"]);
    // A parameter is not a request body: the same schema keeps them.
    expect(convert30(body, false).schema).toMatchObject({ required: ['id', 'name'], properties: { id: { type: 'string', readOnly: true } } });
  });

  it('given a schema that contains itself (a $ref the parser left in place), then it is named once under $defs and referred to there', () => {
    const document = {
      components: { schemas: { Node: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/components/schemas/Node' } } } } } },
    };
    const converter = new SchemaConverter('3.1', document);
    const schema = converter.convert({ type: 'object', properties: { root: { $ref: '#/components/schemas/Node' }, other: { $ref: '#/components/schemas/Node' } } }, false);
    expect(schema).toEqual({ type: 'object', properties: { root: { $ref: '#/$defs/Node' }, other: { $ref: '#/$defs/Node' } } });
    expect(converter.defs()).toEqual({ Node: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } } } });
  });

  it('given a $ref into another file, then any value is accepted there and it is said', () => {
    const converter = new SchemaConverter('3.1', {});
    expect(converter.convert({ type: 'object', properties: { a: { $ref: 'common.yaml#/Thing' } } }, false)).toEqual({ type: 'object', properties: { a: {} } });
    expect(converter.notes()).toEqual(["references not followed, any value accepted there: 'common.yaml#/Thing'"]);
  });
});
