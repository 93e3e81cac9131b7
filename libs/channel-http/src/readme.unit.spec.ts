import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseContractFile } from '@oncegate/contracts';
import { renderHttpRequest } from './index';
import type { HttpAttemptResult, HttpDispatcher } from './index';

// README example start
const contractText = `
version: 1
tools:
  - name: set_config
    description: Set a named configuration entry.
    class: idempotent_write
    channel: http
    target: demo/config
    credential_ref: demo-config-writer
    input_schema:
      type: object
      properties:
        name: { type: string }
        value: { type: string }
        dry_run: { type: boolean, default: false }
      required: [name, value]
    http:
      method: PUT
      url: http://127.0.0.1:8790/config/{{args.name}}
      body: { value: "{{args.value}}", dry_run: "{{args.dry_run}}" }
      idempotency_header: Idempotency-Key
    correlation_window: 5m
`;
const tool = parseContractFile(contractText, 'tools.yaml').tools[0]!;

const rendered = renderHttpRequest(tool, { name: 'db pool', value: '20' }, 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E');
// 'http://127.0.0.1:8790/config/db%20pool'
// '{"value":"20","dry_run":false}'
// {"content-type":"application/json","Idempotency-Key":"ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E"}

async function dispatch(dispatcher: HttpDispatcher, token: string): Promise<string> {
  const result: HttpAttemptResult = await dispatcher.send({
    executionId: 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E',
    tool,
    arguments: { name: 'db.pool', value: '20' },
    credential: { headers: { Authorization: `Bearer ${token}` } },
  });
  switch (result.kind) {
    case 'response':
      return `${result.outcome} ${result.status}`; // OutcomeObserved
    case 'not_sent':
      return `not sent: ${result.reason}`; // definite: safe to send again
    case 'unknown':
      return `unknown: ${result.reason}`; // OutcomeUnknown: the class's recovery rule decides
  }
}
// README example end

function codeBlockOfReadme(): string {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  return block.replace(/^import [\s\S]*?\n\n/, '');
}

function exampleInThisFile(): string {
  const source = readFileSync(new URL(import.meta.url), 'utf8');
  return source.split('// README example start\n')[1]!.split('// README example end')[0]!;
}

describe('README example', () => {
  it('given the README, then its code block is the code this spec compiles and runs', () => {
    expect(codeBlockOfReadme()).toBe(exampleInThisFile());
    expect(typeof dispatch).toBe('function');
  });

  it('given the example, then the values in its comments are what renderHttpRequest returns', () => {
    const comments = [...exampleInThisFile().matchAll(/^\/\/ (.*)$/gm)].map((match) => match[1]);

    expect(comments).toEqual([`'${rendered.url}'`, `'${rendered.body}'`, JSON.stringify(rendered.headers)]);
  });
});
