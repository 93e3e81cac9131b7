import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalEventJson, canonicalJsonUnchecked } from './canonical-json-writer';

/** `canonicalize` (the package the hashes were first computed with) is the reference. */
function same(value: unknown): void {
  expect(canonicalJsonUnchecked(value)).toBe(canonicalize(value));
}

const unicodeString = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  // Lone surrogates, controls, quotes and backslashes: the escapes.
  fc.string({ unit: fc.constantFrom('\ud800', '\udfff', '\u0000', '\u001f', '\u007f', '"', '\\', '\u2028', 'é', '😀', 'a') }),
);
const numbers = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom(1e21, 1e-7, 1.5e-7, -0, 0, 5e-324, 1.7976931348623157e308, 123456789012345680000, 0.1 + 0.2, 2 ** 53 + 2),
);
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    unicodeString,
    numbers,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.oneof(unicodeString, fc.constantFrom('1', '10', '9', '__proto__', 'a', 'B', '')), tie('value'), { maxKeys: 6 }),
  ),
})).value;

describe('canonicalJsonUnchecked (byte-identical to the canonicalize package)', () => {
  it('given any JSON value, then it prints what canonicalize prints', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        same(value);
      }),
      { numRuns: 1000 },
    );
  });

  it('given unicode strings, nested objects and edge numbers, then it prints what canonicalize prints', () => {
    fc.assert(
      fc.property(json, (value) => {
        same(value);
      }),
      { numRuns: 2000 },
    );
  });

  it('given values JSON.parse returns (integer-like keys, __proto__, escapes), then it matches canonicalize', () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        same(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
    same(JSON.parse('{"__proto__":{"b":1,"a":2},"10":1,"9":2,"":[-0,1E21,1.5E-7,"\\u00e9\\ud800"]}'));
  });

  it('given lone surrogates, -0, large and tiny numbers and unicode keys, then it prints these exact bytes, as canonicalize does', () => {
    const cases: [unknown, string][] = [
      ['\ud800', '"\\ud800"'],
      ['a\udfffb\ud83d\ude00', '"a\\udfffb😀"'],
      [{ '\ud800': 1 }, '{"\\ud800":1}'],
      [-0, '0'],
      [[-0, 0, -0.0], '[0,0,0]'],
      [[1e21, 1e20, 2 ** 53 + 2, 123456789012345680000, -1.7976931348623157e308], '[1e+21,100000000000000000000,9007199254740994,123456789012345680000,-1.7976931348623157e+308]'],
      [[5e-324, 1e-7, 1.5e-7, 0.000001, 0.1 + 0.2], '[5e-324,1e-7,1.5e-7,0.000001,0.30000000000000004]'],
      // UTF-16 code unit order: 'B' < 'a' < 'é' < '\ud800' < '😀' (\ud83d\ude00) < '\uffff'; '10' < '9' as strings.
      [{ '\uffff': 6, '😀': 5, '\ud800': 4, é: 3, a: 2, B: 1, '9': 8, '10': 7, '': 0 }, '{"":0,"10":7,"9":8,"B":1,"a":2,"é":3,"\\ud800":4,"😀":5,"\uffff":6}'],
      [{ b: { d: 1, c: [{ f: 1, e: 2 }] }, a: null }, '{"a":null,"b":{"c":[{"e":2,"f":1}],"d":1}}'],
    ];
    for (const [value, expected] of cases) {
      expect(canonicalJsonUnchecked(value)).toBe(expected);
      expect(canonicalize(value)).toBe(expected);
    }
  });

  it('given the quirks of the reference (undefined, functions, symbols, holes, toJSON), then it matches them', () => {
    const values: unknown[] = [
      undefined,
      { a: undefined, b: Symbol('s'), c: () => 1, d: 1 },
      [undefined, Symbol('s'), () => 1, 1],
      [, 1, , 2],
      { when: new Date(Date.UTC(2026, 0, 1)) },
      { toJSON: () => ({ z: 1, a: [2] }) },
      { nested: { toJSON: () => undefined } },
      { toJSON: () => undefined },
      { toJSON: 'not a function', b: 1 },
      Object.assign(Object.create({ inherited: 1 }), { own: 2 }),
      new String('ab'),
      'x',
      -0,
      true,
    ];
    for (const value of values) same(value);
    for (const bad of [NaN, Infinity, -Infinity, { a: [1, NaN] }, { a: { b: Infinity } }]) {
      expect(() => canonicalJsonUnchecked(bad)).toThrow(/not allowed/);
      expect(() => canonicalize(bad)).toThrow(/not allowed/);
    }
  });

  it('given event fields of any type, then canonicalEventJson prints canonicalize of the seven fields', () => {
    const field = fc.oneof(fc.jsonValue(), fc.constant(undefined));
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), field),
        fc.oneof(fc.nat(), field),
        fc.oneof(fc.string(), field),
        fc.oneof(fc.string(), field),
        json,
        fc.oneof(fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 4 }), field),
        fc.oneof(fc.string(), field),
        (streamId, revision, id, type, data, metadata, recordedAt) => {
          expect(canonicalEventJson(streamId, revision, id, type, data, metadata, recordedAt)).toBe(
            canonicalize({ streamId, revision, id, type, data, metadata, recordedAt }),
          );
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('given parsed JSON, then canonicalEventJson (native stringify over sorted copies) matches canonicalize and leaves the input as it was', () => {
    const key = fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('toJSON', 'constructor', 'a', 'b', 'Z', 'é', '😀', '\ud800'));
    const value = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 1 }),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(key, tie('value'), { maxKeys: 6 }),
      ),
    })).value;
    fc.assert(
      fc.property(value, value, (data, metadata) => {
        const [d, m] = JSON.parse(JSON.stringify([data, { ...(metadata as object) }])) as [unknown, Record<string, unknown>];
        const before = JSON.stringify([d, m]);
        expect(canonicalEventJson('s', 1, 'id', 'T', d, m, 'at')).toBe(
          canonicalize({ streamId: 's', revision: 1, id: 'id', type: 'T', data: d, metadata: m, recordedAt: 'at' }),
        );
        expect(JSON.stringify([d, m])).toBe(before);
      }),
      { numRuns: 1000 },
    );
  });
});
