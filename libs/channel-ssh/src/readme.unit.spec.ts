import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseContractFile } from '@oncegate/contracts';
import { renderSshCommand, MARKER_PROBE_SCRIPT, MARKER_WRAPPER_SCRIPT } from './index';
import type { MarkerProbe, SshAttemptResult, SshCredential, SshDispatcher } from './index';

// README example start
const contractText = `
version: 1
tools:
  - name: migrate_db
    description: Migrate the database schema to a version.
    class: remote_command
    channel: ssh
    target: db1/schema
    credential_ref: db1-deploy-key
    input_schema:
      type: object
      properties:
        version: { type: string, pattern: "^[0-9]{4}-[0-9]{2}$" }
      required: [version]
    ssh:
      host: 10.0.0.5
      user: deploy
      host_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
      cwd: /srv/app
      argv: [/usr/local/bin/migrate, --to, "{{args.version}}", --run-id, "{{execution.id}}"]
    marker:
      directory: /var/lib/oncegate/markers
      written_before_work: true
    correlation_window: 1h
`;
const tool = parseContractFile(contractText, 'tools.yaml').tools[0]!;
const executionId = 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E';

const rendered = renderSshCommand(tool, { version: '2024-06' }, executionId, 1);
// ["/usr/local/bin/migrate","--to","2024-06","--run-id","ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E"]

async function dispatch(dispatcher: SshDispatcher, credential: SshCredential): Promise<string> {
  const result: SshAttemptResult = await dispatcher.run({ executionId, attempt: 1, tool, arguments: { version: '2024-06' }, credential });
  switch (result.kind) {
    case 'exited':
      return `${result.outcome}: exit ${result.exitCode}`; // OutcomeObserved
    case 'not_sent':
      return `not sent: ${result.reason}`; // definite: nothing ran, safe to send again
    case 'denied':
      return `denied: ${result.reason}`; // not the pinned host: a denial, never retried
    case 'unknown':
      return `unknown: ${result.reason}`; // OutcomeUnknown: probe the marker
    case 'claimed':
      return `refused: ${result.reason}`; // another attempt holds the execution: its marker decides
  }
}

async function recover(dispatcher: SshDispatcher, credential: SshCredential): Promise<string> {
  const probe: MarkerProbe = await dispatcher.probeMarker({ executionId, tool, credential });
  switch (probe.kind) {
    case 'completed':
      return `finished: exit ${probe.exitStatus}, output kept at ${probe.keptOutput.join(', ') || 'nowhere'}`; // the outcome, late
    case 'started':
      return 'started, no end recorded'; // review
    case 'absent':
      return tool.marker?.writtenBeforeWork ? 'never started' : 'no marker'; // may dispatch again / review
    case 'denied':
      return `denied: ${probe.reason}`;
    case 'not_sent':
    case 'unknown':
      return `probe failed: ${probe.reason}`; // nothing learned: probe again later
  }
}
// README example end

function readme(): string {
  return readFileSync(new URL('../README.md', import.meta.url), 'utf8');
}

function codeBlocks(language: string): string[] {
  return [...readme().matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((match) => match[1] ?? '');
}

function exampleInThisFile(): string {
  const source = readFileSync(new URL(import.meta.url), 'utf8');
  return source.split('// README example start\n')[1]!.split('// README example end')[0]!;
}

describe('README', () => {
  it('given the README, then its TypeScript block is the code this spec compiles and runs', () => {
    expect(codeBlocks('ts')[0]?.replace(/^import [\s\S]*?\n\n/, '')).toBe(exampleInThisFile());
    expect([typeof dispatch, typeof recover]).toEqual(['function', 'function']);
  });

  it('given the example, then the argv in its comment is what renderSshCommand returns', () => {
    const comment = /^\/\/ (\[.*\])$/m.exec(exampleInThisFile())?.[1];

    expect(comment).toBe(JSON.stringify(rendered.argv));
  });

  it('given the README, then its shell blocks are the wrapper and probe scripts the dispatcher sends, byte for byte', () => {
    expect(codeBlocks('sh')).toEqual([MARKER_WRAPPER_SCRIPT, MARKER_PROBE_SCRIPT]);
  });
});
