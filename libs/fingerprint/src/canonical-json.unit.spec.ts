import { describe, expect, it } from 'vitest';
import { canonicalJson, NonJsonValueError, toJsonValue } from './index';
import { catchError } from './test-fixtures';

describe('canonicalJson (RFC 8785)', () => {
  it('given the RFC 8785 section 3.2.2 example, when canonicalised, then it matches the RFC output', () => {
    const input = JSON.parse(String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`);

    expect(canonicalJson(input)).toBe(
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],` +
        String.raw`"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
  });

  it('given the RFC 8785 section 3.2.3 keys, when canonicalised, then they are sorted by UTF-16 code units', () => {
    const input = JSON.parse(
      String.raw`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh",` +
        String.raw`"1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control",` +
        String.raw`"\u00f6":"Latin Small Letter O With Diaeresis"}`,
    );

    const order = Object.values(JSON.parse(canonicalJson(input)) as Record<string, string>);

    // U+1F600 (surrogates D83D DE00) sorts before U+FB33: code units, not code points.
    expect(order).toEqual([
      'One',
      'Carriage Return',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ]);
  });

  it.each([
    ['1.0', '1'],
    ['1e21', '1e+21'],
    ['1e20', '100000000000000000000'],
    ['-0', '0'],
    ['-0.0', '0'],
    ['1e-7', '1e-7'],
    ['0.000001', '0.000001'],
    ['4.50', '4.5'],
    ['1E30', '1e+30'],
    ['5e-324', '5e-324'],
  ])('given the number %s in JSON text, when canonicalised, then it is %s', (text, expected) => {
    expect(canonicalJson(JSON.parse(text))).toBe(expected);
  });

  it('given strings with control and non-ASCII characters, when canonicalised, then only the JSON minimum is escaped', () => {
    expect(canonicalJson({ s: 'a\tb\n"\\/\u0007\u001f\u2028é😀' })).toBe('{"s":"a\\tb\\n\\"\\\\/\\u0007\\u001f\u2028é😀"}');
  });

  it('given nested objects, when canonicalised, then every level is sorted and no whitespace is written', () => {
    expect(canonicalJson({ b: [{ z: 1, y: { d: null, c: true } }], a: {} })).toBe(
      '{"a":{},"b":[{"y":{"c":true,"d":null},"z":1}]}',
    );
  });

  it('given an object property that is undefined, when canonicalised, then the property is absent as in JSON', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
  });

  it('given the same object reached twice without a cycle, when canonicalised, then both places are written', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared] })).toBe('{"a":{"x":1},"b":[{"x":1}]}');
  });

  it('given a "__proto__" key parsed from JSON, when copied, then it stays an own data property', () => {
    const copy = toJsonValue(JSON.parse('{"__proto__":{"polluted":true}}')) as Record<string, unknown>;

    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(canonicalJson(copy)).toBe('{"__proto__":{"polluted":true}}');
  });
});

describe('toJsonValue refuses what is not JSON', () => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic['self'] = { back: cyclic };
  const cyclicArray: unknown[] = [];
  cyclicArray.push(cyclicArray);
  const sparse = [1, , 3];

  it.each([
    ['a function', { f: () => 1 }, '$.f', 'function'],
    ['a symbol', { s: Symbol('x') }, '$.s', 'symbol'],
    ['a bigint', { n: 10n }, '$.n', 'bigint'],
    ['NaN', { n: Number.NaN }, '$.n', 'non_finite_number'],
    ['Infinity', { n: [Number.POSITIVE_INFINITY] }, '$.n[0]', 'non_finite_number'],
    ['-Infinity', { n: Number.NEGATIVE_INFINITY }, '$.n', 'non_finite_number'],
    ['undefined inside an array', { list: [1, undefined] }, '$.list[1]', 'undefined'],
    ['an array hole', { list: sparse }, '$.list[1]', 'undefined'],
    ['undefined as the whole value', undefined, '$', 'undefined'],
    ['a Date', { at: new Date(0) }, '$.at', 'non_plain_object'],
    ['a Map', { m: new Map() }, '$.m', 'non_plain_object'],
    ['a Buffer', { b: Buffer.from('x') }, '$.b', 'non_plain_object'],
    ['a cyclic object', cyclic, '$.self.back', 'cycle'],
    ['a cyclic array', cyclicArray, '$[0]', 'cycle'],
    ['a lone surrogate in a string', { s: 'a\ud800b' }, '$.s', 'lone_surrogate'],
    ['a lone surrogate in a key', { ['k\udc00']: 1 }, '$.<key>', 'lone_surrogate'],
  ])('given %s, then NonJsonValueError names the path and reason', (_label, value, path, reason) => {
    const error = catchError(() => toJsonValue(value));

    expect(error).toBeInstanceOf(NonJsonValueError);
    expect(error).toMatchObject({ kind: 'non_json_value', path, reason });
    expect(() => canonicalJson(value)).toThrow(NonJsonValueError);
  });

  it('given a value, when copied, then the copy shares nothing with the input and the input is unchanged', () => {
    const input = { a: { b: [1, { c: 'd' }] } };
    const before = structuredClone(input);

    const copy = toJsonValue(input) as { a: { b: [number, { c: string }] } };
    copy.a.b[1].c = 'changed';

    expect(input).toEqual(before);
  });
});
