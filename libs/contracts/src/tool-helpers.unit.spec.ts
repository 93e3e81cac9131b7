import { describe, expect, it } from 'vitest';
import { annotationsOf } from './annotations';
import { fingerprintPolicyOf } from './fingerprint-policy';
import { parseContractFile } from './parse-contract-file';
import type { ToolContract } from './tool-contract';
import { assertValidArguments, InvalidArgumentsError, validateArguments } from './validate-arguments';

const CONTRACTS = `
version: 1
tools:
  - name: send_payment
    description: Charge a card.
    class: irreversible
    channel: http
    target: demo/payments
    input_schema:
      type: object
      properties:
        reference: { type: string, minLength: 8 }
        amount_cents: { type: integer, minimum: 1 }
        currency: { type: string, enum: [EUR, USD], default: EUR }
        card_token: { type: string }
        note: { type: string }
        options:
          type: object
          default: { notify: true }
          properties:
            notify: { type: boolean, default: true }
            channel: { type: string, default: email }
          additionalProperties: false
      required: [reference, amount_cents, card_token]
      additionalProperties: false
    http: { method: POST, url: "http://127.0.0.1:8790/payments", body: { card: "{{args.card_token}}" } }
    fingerprint: { exclude: [note, options.channel] }
    secret_arguments: [card_token]
    durable_key_argument: reference
    correlation_window: 1d
  - name: get_build
    description: Read a build.
    class: read_only
    channel: http
    target: demo/builds
    input_schema: { type: object, properties: { id: { type: string } } }
    http: { method: GET, url: "http://127.0.0.1:8790/builds/{{args.id}}" }
    correlation_window: 30s
  - name: set_config
    description: Set a config entry.
    class: idempotent_write
    channel: http
    target: demo/config
    input_schema: { type: object }
    http: { method: PUT, url: "http://127.0.0.1:8790/config" }
    correlation_window: 5m
`;

const tools = parseContractFile(CONTRACTS, 'tools.yaml').tools;
const tool = (name: string): ToolContract => {
  const found = tools.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(name);
  return found;
};

describe('fingerprintPolicyOf', () => {
  it('given a tool with defaults, exclusions and secrets, when asked, then it returns them by dotted path', () => {
    expect(fingerprintPolicyOf(tool('send_payment'))).toEqual({
      defaults: { currency: 'EUR', options: { notify: true }, 'options.notify': true, 'options.channel': 'email' },
      exclude: ['note', 'options.channel'],
      secret: ['card_token'],
    });
  });

  it('given a tool without any, when asked, then every part is empty', () => {
    expect(fingerprintPolicyOf(tool('get_build'))).toEqual({ defaults: {}, exclude: [], secret: [] });
  });

  it('given a frozen contract, when asked again, then the same policy is given, and it cannot be changed', () => {
    const policy = fingerprintPolicyOf(tool('send_payment'));
    expect(fingerprintPolicyOf(tool('send_payment'))).toBe(policy);
    expect(() => (policy.exclude as string[]).push('amount_cents')).toThrow(TypeError);
    expect(() => ((policy.defaults['options'] as Record<string, unknown>)['notify'] = false)).toThrow(TypeError);
    expect(fingerprintPolicyOf(tool('send_payment')).exclude).toEqual(['note', 'options.channel']);
    expect(fingerprintPolicyOf(tool('send_payment')).defaults['options']).toEqual({ notify: true });
  });

  it('given a contract that is not frozen, when it changes, then the next policy follows it', () => {
    const open = structuredClone(tool('send_payment')) as ToolContract & { fingerprint: { exclude: string[] } };
    const before = fingerprintPolicyOf(open);
    open.fingerprint.exclude.push('amount_cents');
    expect(fingerprintPolicyOf(open).exclude).toEqual([...before.exclude, 'amount_cents']);
    expect(fingerprintPolicyOf(open)).not.toBe(before);
  });
});

describe('annotationsOf', () => {
  it.each([
    ['get_build', { readOnlyHint: true, idempotentHint: true, destructiveHint: false }],
    ['set_config', { readOnlyHint: false, idempotentHint: true, destructiveHint: false }],
    ['send_payment', { readOnlyHint: false, idempotentHint: false, destructiveHint: true }],
  ])('given %s, when asked, then the hints come from its class', (name, annotations) => {
    expect(annotationsOf(tool(name))).toEqual(annotations);
  });
});

describe('validateArguments', () => {
  it('given arguments that match the schema, when validated, then there is no violation', () => {
    expect(validateArguments(tool('send_payment'), { reference: 'order-0001', amount_cents: 500, card_token: 'tok_x' })).toEqual([]);
  });

  it('given arguments that break the schema, when validated, then each violation names its JSON pointer', () => {
    const violations = validateArguments(tool('send_payment'), { reference: 'short', amount_cents: 0, currency: 'JPY', options: { notify: 'yes', extra: 1 } });
    expect(violations).toEqual(
      expect.arrayContaining([
        { pointer: '/card_token', keyword: 'required', message: 'is required' },
        { pointer: '/reference', keyword: 'minLength', message: 'must NOT have fewer than 8 characters' },
        { pointer: '/amount_cents', keyword: 'minimum', message: 'must be >= 1' },
        { pointer: '/currency', keyword: 'enum', message: 'must be equal to one of the allowed values: "EUR", "USD"' },
        { pointer: '/options/notify', keyword: 'type', message: 'must be boolean' },
        { pointer: '/options/extra', keyword: 'additionalProperties', message: 'is not a declared argument' },
      ]),
    );
    expect(violations).toHaveLength(6);
  });

  it('given a secret argument with a wrong value, when validated, then the violation does not repeat the value', () => {
    const violations = validateArguments(tool('send_payment'), { reference: 'order-0001', amount_cents: 5, card_token: 42 });
    expect(JSON.stringify(violations)).not.toContain('42');
  });

  it('given arguments that are not an object, when validated, then the root is named', () => {
    expect(validateArguments(tool('get_build'), 'x')).toEqual([{ pointer: '', keyword: 'type', message: 'must be object' }]);
  });

  it('given invalid arguments, when asserted, then InvalidArgumentsError carries the tool and violations', () => {
    expect(() => assertValidArguments(tool('get_build'), { id: 5 })).toThrow(InvalidArgumentsError);
    try {
      assertValidArguments(tool('get_build'), { id: 5 });
    } catch (error) {
      expect(error).toMatchObject({ code: 'invalid_arguments', tool: 'get_build', violations: [{ pointer: '/id', keyword: 'type' }] });
    }
  });
});
