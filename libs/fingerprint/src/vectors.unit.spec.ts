import { describe, expect, it } from 'vitest';
import {
  buildOperationRecord,
  candidateFingerprints,
  canonicalJson,
  fingerprint,
  keyRingFromConfig,
  type FingerprintPolicy,
  type KeyState,
} from './index';
// A JSON import, not node:fs: the vectors are data of this library and type:domain code reads no files.
import vectorsFile from '../test-data/vectors.json';

/** The shape of test-data/vectors.json, a contract other implementations test against. */
interface VectorsFile {
  readonly description: string;
  readonly key_ring: {
    readonly current: string;
    readonly keys: readonly { readonly id: string; readonly state: KeyState; readonly secret_hex: string }[];
    readonly argument_key: { readonly id: string; readonly secret_hex: string };
  };
  readonly vectors: readonly {
    readonly name: string;
    readonly note: string;
    readonly input: {
      readonly actor: string;
      readonly tool: string;
      readonly channel: string;
      readonly target: string;
      readonly credential_ref: string | null;
      readonly method?: string;
      readonly intent_scope: string;
      readonly arguments?: Record<string, unknown>;
      readonly arguments_json?: string;
      readonly policy: FingerprintPolicy;
    };
    readonly expected: {
      readonly canonical_json: string;
      readonly fingerprint: string;
      readonly candidate_fingerprints: readonly string[];
    };
  }[];
}

const file = vectorsFile as unknown as VectorsFile;
const ring = keyRingFromConfig({
  current: file.key_ring.current,
  keys: file.key_ring.keys.map((key) => ({ id: key.id, state: key.state, secret: key.secret_hex })),
  argumentKey: { id: file.key_ring.argument_key.id, secret: file.key_ring.argument_key.secret_hex },
});

describe('test vectors (test-data/vectors.json)', () => {
  it('given the file, then it says how the vectors were produced and holds cases', () => {
    expect(file.description).toMatch(/produced/);
    expect(file.vectors.length).toBeGreaterThanOrEqual(8);
    expect(new Set(file.vectors.map((vector) => vector.name)).size).toBe(file.vectors.length);
  });

  it.each(file.vectors.map((vector) => [vector.name, vector] as const))(
    'given vector %s, then the canonical JSON and fingerprints match',
    (_name, { input, expected }) => {
      const args = input.arguments_json === undefined ? input.arguments : JSON.parse(input.arguments_json);
      const record = buildOperationRecord(
        {
          actor: input.actor,
          tool: input.tool,
          channel: input.channel,
          target: input.target,
          credentialRef: input.credential_ref,
          method: input.method,
          arguments: args,
          intentScope: input.intent_scope,
        },
        input.policy,
        ring,
      );

      expect(canonicalJson(record)).toBe(expected.canonical_json);
      expect(fingerprint(record, ring)).toBe(expected.fingerprint);
      expect(candidateFingerprints(record, ring)).toEqual(expected.candidate_fingerprints);
    },
  );
});
