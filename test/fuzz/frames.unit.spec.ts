import { readFileSync } from 'node:fs';
import { parseContractFile } from '@oncegate/contracts';
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import { frameAt } from './frames';

const tools = parseContractFile(readFileSync(new URL('../support/test-tools.yaml', import.meta.url), 'utf8').replaceAll('TARGET', 'http://127.0.0.1:9'), 'test-tools.yaml').tools;
// A validator of its own, not the gateway's: the premise must not share the gateway's mistakes.
const ajv = new Ajv2020({ strict: false, allErrors: false });
const validators = new Map(tools.map((tool) => [tool.name, ajv.compile(tool.inputSchema)]));

/** The tools/call messages of a frame body, however it is batched. */
function calls(body: string): Array<{ name?: unknown; arguments?: unknown }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  return (Array.isArray(parsed) ? parsed : [parsed])
    .filter((m): m is { method: string; params: { name?: unknown; arguments?: unknown } } => typeof m === 'object' && m !== null && (m as { method?: unknown }).method === 'tools/call')
    .map((m) => (typeof m.params === 'object' && m.params !== null ? m.params : {}));
}

describe('fuzz frames', () => {
  it('given a seed and an index, then the frame is the same every time', () => {
    expect(frameAt(7, 123)).toEqual(frameAt(7, 123));
    expect(frameAt(7, 123)).not.toEqual(frameAt(8, 123));
  });

  it('given 3,000 frames, then none is a valid call of a side-effecting tool, so any execution they cause is a gateway bug', () => {
    const valid: string[] = [];
    let proto = 0;
    for (let index = 0; index < 3_000; index++) {
      const frame = frameAt(20261130, index);
      if (typeof frame.body !== 'string') continue;
      for (const call of calls(frame.body)) {
        const validate = typeof call.name === 'string' ? validators.get(call.name) : undefined;
        if (validate !== undefined && validate(call.arguments)) valid.push(`frame ${index}: ${frame.body.slice(0, 200)}`);
        if (typeof call.arguments === 'object' && call.arguments !== null && Object.hasOwn(call.arguments, '__proto__')) proto += 1;
      }
    }
    expect(valid).toEqual([]);
    // The own __proto__ argument is among them, and still refused by a schema with additionalProperties: false.
    expect(proto).toBeGreaterThan(0);
  });
});
