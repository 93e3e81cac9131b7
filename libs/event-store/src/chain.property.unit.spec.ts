import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateAppend } from './append-validation';
import { eventHash, GENESIS_HASH, linkEvents } from './chain';

/**
 * The chain's definition before the canonical texts were built at validation: the store serialised the event,
 * parsed its own text back and hashed the RFC 8785 form of what it parsed (here with the reference package).
 * Journals written that way must still verify, so the link computed from the texts built once must be that hash,
 * byte for byte, for every value an append accepts.
 */
function hashOfParsedBack(prev: string, fields: { streamId: string; revision: number; id: string; type: string; dataText: string; metadataText: string; recordedAt: string }): string {
  const event = {
    streamId: fields.streamId,
    revision: fields.revision,
    id: fields.id,
    type: fields.type,
    data: JSON.parse(fields.dataText) as unknown,
    metadata: JSON.parse(fields.metadataText) as unknown,
    recordedAt: fields.recordedAt,
  };
  return createHash('sha256').update(prev + '\n' + canonicalize(event)!).digest('hex');
}

/** `JSON.rawJSON` (Node 21+; not in this TypeScript's lib). */
const rawJSON = (JSON as unknown as { rawJSON(text: string): object }).rawJSON;

const RECORDED_AT = '2026-12-01T03:00:00.000Z';

/**
 * Appends one event to a stream whose tip is `tip` both ways. When the old way fails (`JSON.stringify` refuses
 * the value, or what it wrote parses back to something without a canonical form), the append must be refused up
 * front; otherwise the stored text is `JSON.stringify`'s (`exactText`; raw JSON is stored as it parses), the value
 * handed to live subscribers is what parsing it gives, and the link is the old definition's.
 */
function checkBothWays(
  data: unknown,
  metadata: unknown,
  { streamId = 'execution-x', type = 'ExecutionAccepted', tip, exactText = true }: { streamId?: string; type?: string; tip?: { revision: number; hash: string }; exactText?: boolean } = {},
) {
  const prev = tip?.hash ?? GENESIS_HASH;
  const revision = (tip?.revision ?? -1) + 1;
  let dataText: string | undefined;
  let metadataText: string | undefined;
  let expected: string | undefined;
  try {
    dataText = JSON.stringify(data);
    metadataText = JSON.stringify(metadata);
    if (dataText !== undefined && metadataText !== undefined) {
      expected = hashOfParsedBack(prev, { streamId, revision, id: 'e-1', type, dataText, metadataText, recordedAt: RECORDED_AT });
    }
  } catch {
    expected = undefined;
  }
  const append = () => validateAppend(streamId, [{ id: 'e-1', type, data, metadata: metadata as Record<string, unknown> }], 'any');
  if (expected === undefined || dataText === undefined || metadataText === undefined) {
    expect(append).toThrow();
    return;
  }
  const [event] = append();
  if (exactText) {
    expect(event!.data).toBe(dataText);
    expect(event!.metadata).toBe(metadataText);
  }
  expect(JSON.parse(event!.data)).toStrictEqual(JSON.parse(dataText));
  expect(event!.dataValue).toStrictEqual(JSON.parse(dataText));
  expect(event!.metadataValue).toStrictEqual(JSON.parse(metadataText));
  const [link] = linkEvents(streamId, tip, [{ id: 'e-1', type, canonicalData: event!.canonicalData, canonicalMetadata: event!.canonicalMetadata }], RECORDED_AT);
  expect(link).toEqual({ revision, prev, hash: expected });
  // The chain's own eventHash, over the event as a reader gets it, agrees.
  expect(eventHash(prev, { streamId, revision, id: 'e-1', type, data: event!.dataValue, metadata: event!.metadataValue, recordedAt: RECORDED_AT })).toBe(expected);
}

class Money {
  constructor(
    readonly amount: number,
    readonly currency: string,
  ) {}
}

/** Values `JSON.stringify` treats in its own way, each of which an append accepts (or must refuse as it does). */
const HOSTILE: ReadonlyArray<[string, unknown]> = [
  ['undefined members and array items', { a: undefined, b: [undefined, () => 1, Symbol('s')], c: () => 1, d: Symbol('t') }],
  ['NaN and infinities', { nan: NaN, inf: Infinity, ninf: -Infinity, list: [NaN, -Infinity] }],
  ['negative zero', { z: -0, list: [-0, 0], nested: { z: -0 } }],
  ['large and small numbers', [1e21, 1e-7, 5e-324, 1.7976931348623157e308, 2 ** 53 + 1, 123456789012345680000, 0.1 + 0.2, -1e-300]],
  ['lone surrogates in values and keys', { '\ud800': 'x\udc00y', pair: '\ud83d\ude00', list: ['\udfff', '\ud800\ud800'] }],
  ['controls and quotes', { 'k"\\\n': '\u0000\u001f"\\\u2028\u2029' }],
  ['toJSON on nested objects, called with the key', { when: new Date(0), custom: { toJSON: (key: string) => `key:${key}` }, list: [{ toJSON: (key: string) => key }] }],
  ['toJSON returning undefined', { gone: { toJSON: () => undefined }, list: [{ toJSON: () => undefined }] }],
  ['toJSON on the top value', { toJSON: () => ({ b: 2, a: 1 }) }],
  ['boxed primitives', { n: Object(5), s: Object('str'), b: Object(false), list: [Object(-0), Object(NaN)] }],
  ['a boxed number with a plain prototype', { n: Object.setPrototypeOf(Object(7), Object.prototype) }],
  ['sparse arrays', [1, , 3, , ,]],
  ['array-index keys and __proto__', JSON.parse('{"b":1,"10":2,"2":3,"a":4,"__proto__":{"x":1},"-1":5,"01":6}')],
  ['null prototype objects', Object.assign(Object.create(null), { z: 1, a: Object.assign(Object.create(null), { y: 2 }) })],
  ['class instances, maps, sets, typed arrays', { money: new Money(5, 'EUR'), map: new Map([[1, 2]]), set: new Set([1]), bytes: new Uint8Array([1, 2]) }],
  ['getters and non-enumerable properties', Object.defineProperties({}, { shown: { get: () => 'g', enumerable: true }, hidden: { value: 1, enumerable: false } })],
  ['symbol keys', { [Symbol('k')]: 1, kept: true }],
  ['deep nesting', JSON.parse('['.repeat(80) + '{"b":1,"a":2}' + ']'.repeat(80))],
  ['keys out of order at every level', { z: { y: { x: 1, a: 2 }, b: [{ d: 1, c: 2 }] }, a: null }],
  ['top-level primitives', 'plain string'],
  ['a bigint', { n: 1n }],
  ['a cycle', (() => { const o: Record<string, unknown> = {}; o['self'] = o; return o; })()],
  ['a function', () => 1],
];

describe('the hash chain from texts built once', () => {
  it('given raw JSON, when linked, then the hash is the one of its text parsed back, and a number beyond doubles is refused as it failed before', () => {
    checkBothWays({ rawText: rawJSON('"raw"'), rawNumber: rawJSON('1.50') }, {}, { exactText: false });
    checkBothWays({ raw: rawJSON('1e400') }, {});
  });

  it.each(HOSTILE)('given data with %s, when linked, then the hash is the one of the event parsed back', (_, value) => {
    checkBothWays(value, { actor: 'agent:a' });
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) checkBothWays({ n: 1 }, value);
  });

  it('given any value fast-check makes, with any stream, type and tip, when linked, then the hash is the one of the event parsed back', () => {
    const value = fc.anything({
      withBoxedValues: true,
      withNullPrototype: true,
      withSparseArray: true,
      withObjectString: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withTypedArray: true,
      stringUnit: 'binary',
      maxDepth: 4,
    });
    const text = fc.string({ unit: 'binary', minLength: 1 });
    fc.assert(
      fc.property(
        value,
        fc.dictionary(fc.string({ unit: 'binary' }), value),
        text.filter((s) => !/[\u0000-\u001f\u007f]/.test(s)),
        text,
        fc.option(fc.record({ revision: fc.nat(), hash: fc.stringMatching(/^[0-9a-f]{64}$/) }), { nil: undefined }),
        (data, metadata, streamId, type, tip) => checkBothWays(data, metadata, { streamId, type, tip }),
      ),
      { numRuns: 2000 },
    );
  });
});
