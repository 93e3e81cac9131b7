import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildOperationRecord, candidateFingerprints, fingerprint, fingerprintDigest, keyRingFromConfig } from './index';

// README example start
const ring = keyRingFromConfig({
  current: 'fp-2026-07',
  keys: [
    { id: 'fp-2026-07', secret: '4f6e636567617465207465737420766563746f72206b65792032303236203037' },
    { id: 'fp-2026-01', secret: '4f6e636567617465207465737420766563746f72206b65792032303236203031', state: 'verify_only' },
  ],
  argumentKey: { id: 'args-1', secret: '4f6e63656761746520617267756d656e74206b6579206e756d626572206f6e65' },
});

const record = buildOperationRecord(
  {
    actor: 'agent:deploy-bot',
    tool: 'deploy_release',
    channel: 'http',
    target: 'deploy-api.internal.example/releases',
    credentialRef: 'deploy-service',
    method: 'POST',
    arguments: { region: 'us-east-1', service: 'catalog', version: '2026.07.22', _meta: { progressToken: 7 } },
    intentScope: 'run:5f8097',
  },
  { defaults: {}, exclude: [], secret: [] },
  ring,
);

const claimed = fingerprint(record, ring);
// 'hmac-sha256:fp-2026-07:215da10502481ff424b37724f6226165e394e88bcb44d3a682017ddb28d5e8e4'
const lookUp = candidateFingerprints(record, ring);
// [claimed, 'hmac-sha256:fp-2026-01:6f8b681970265eb87a89e6725ac542155ad72a7afdb531840578ff5eb2a582ef']
const stream = `intent-${fingerprintDigest(claimed)}`;
// 'intent-fp-2026-07-215da10502481ff424b37724f6226165e394e88bcb44d3a682017ddb28d5e8e4'
// README example end

function codeBlockOfReadme(): string {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  return block.replace(/^import .*\n\n/, '');
}

function exampleInThisFile(): string {
  const source = readFileSync(new URL(import.meta.url), 'utf8');
  return source.split('// README example start\n')[1]!.split('// README example end')[0]!;
}

describe('README example', () => {
  it('given the README, then its code block is the code this spec runs', () => {
    expect(codeBlockOfReadme()).toBe(exampleInThisFile());
  });

  it('given the example, then the values in its comments are what the code returns', () => {
    const comments = [...exampleInThisFile().matchAll(/^\/\/ (.*)$/gm)].map((match) => match[1]);

    expect(comments).toEqual([
      `'${claimed}'`,
      `[claimed, '${lookUp[1]}']`,
      `'${stream}'`,
    ]);
    expect(lookUp[0]).toBe(claimed);
    expect(record.arguments).not.toHaveProperty('_meta');
  });
});
