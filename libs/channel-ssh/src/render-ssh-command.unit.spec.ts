import { describe, expect, it } from 'vitest';
import { MARKER_PROBE_SCRIPT, MARKER_WRAPPER_SCRIPT } from './marker-scripts';
import { renderMarkerProbe, renderSshCommand, SshRenderError } from './render-ssh-command';
import { shellQuote } from './shell-quote';
import { sshTool } from './test-tools';

const HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';
const EXECUTION = 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E';

const migrate = sshTool(`
class: remote_command
input_schema:
  type: object
  properties:
    version: { type: string }
    dry_run: { type: boolean, default: false }
    steps: { type: integer }
    note: { type: string }
  required: [version]
ssh:
  host: db1.internal
  user: deploy
  host_key: ${HOST_KEY}
  cwd: /srv/app
  argv: [/usr/local/bin/migrate, --to, "{{args.version}}", --dry-run, "{{args.dry_run}}", --run-id, "{{execution.id}}"]
marker: { directory: /var/lib/oncegate/markers, written_before_work: true }
`);

const status = sshTool(`
class: read_only
input_schema: { type: object, properties: { unit: { type: string }, note: { type: string } }, required: [unit] }
ssh:
  host: db1.internal
  user: deploy
  host_key: ${HOST_KEY}
  argv: [/usr/bin/systemctl, status, "{{args.unit}}"]
`);

function renderError(run: () => unknown): SshRenderError {
  try {
    run();
  } catch (error) {
    if (error instanceof SshRenderError) return error;
    throw error;
  }
  throw new Error('expected an SshRenderError');
}

describe('renderSshCommand', () => {
  it('given a remote command, then argv has the values substituted and defaults filled in, one element each', () => {
    const rendered = renderSshCommand(migrate, { version: '2024-06 "final"; drop' }, EXECUTION, 1);

    expect(rendered.argv).toEqual(['/usr/local/bin/migrate', '--to', '2024-06 "final"; drop', '--dry-run', 'false', '--run-id', EXECUTION]);
  });

  it('given a remote command, then the exec string runs the marker wrapper with every value quoted', () => {
    const rendered = renderSshCommand(migrate, { version: "v'1" }, EXECUTION, 2);

    expect(rendered.command).toBe(
      [
        '/bin/sh -c',
        shellQuote(MARKER_WRAPPER_SCRIPT),
        'oncegate-marker',
        `'/var/lib/oncegate/markers' '${EXECUTION}' '2' '/srv/app'`,
        `'/usr/local/bin/migrate' '--to' 'v'\\''1' '--dry-run' 'false' '--run-id' '${EXECUTION}'`,
      ].join(' '),
    );
  });

  it('given a tool without marker, then the exec string is `exec` and the quoted argv', () => {
    expect(renderSshCommand(status, { unit: 'nginx $(id)' }, EXECUTION, 1).command).toBe(`exec '/usr/bin/systemctl' 'status' 'nginx $(id)'`);
  });

  it('given a tool without marker but with a working directory, then it changes there first', () => {
    const tool = sshTool(`
class: read_only
input_schema: { type: object, properties: {} }
ssh: { host: h1, user: deploy, host_key: ${HOST_KEY}, cwd: "/srv/it's here", argv: [/bin/ls] }
`);

    expect(renderSshCommand(tool, {}, EXECUTION, 1).command).toBe(`cd -- '/srv/it'\\''s here' && exec '/bin/ls'`);
  });

  it('given a non-string value, then it is passed as its JSON text', () => {
    const tool = sshTool(`
class: read_only
input_schema: { type: object, properties: { n: { type: integer }, o: { type: object } } }
ssh: { host: h1, user: deploy, host_key: ${HOST_KEY}, argv: [/bin/echo, "{{args.n}}", "{{args.o}}"] }
`);

    expect(renderSshCommand(tool, { n: 5, o: { a: [1, 'x'] } }, EXECUTION, 1).argv).toEqual(['/bin/echo', '5', '{"a":[1,"x"]}']);
  });

  it('given an absent argument without default, then it refuses rather than drop or blank the element', () => {
    const tool = sshTool(`
class: read_only
input_schema: { type: object, properties: { label: { type: string } } }
ssh: { host: h1, user: deploy, host_key: ${HOST_KEY}, argv: [/bin/tag, --label, "{{args.label}}"] }
`);

    const error = renderError(() => renderSshCommand(tool, {}, EXECUTION, 1));

    expect(error).toMatchObject({ kind: 'ssh_render', where: 'argv[2]' });
    expect(error.reason).toContain("'label' is absent");
  });

  it('given a value with a NUL byte, then it refuses and the message does not quote the value', () => {
    const error = renderError(() => renderSshCommand(status, { unit: 'secret-unit\0x' }, EXECUTION, 1));

    expect(error).toMatchObject({ kind: 'ssh_render', tool: 'test_ssh_tool', where: 'argv[2]' });
    expect(error.message).not.toContain('secret-unit');
  });

  it('given a value with a lone UTF-16 surrogate, then it refuses: UTF-8 cannot carry it exactly', () => {
    expect(renderError(() => renderSshCommand(status, { unit: 'a\uD800b' }, EXECUTION, 1)).reason).toContain('surrogate');
  });

  it.each(['', '../etc', '.hidden', 'a/b', 'a b', 'x'.repeat(129), "ex'1"])(
    'given the execution id %j, then it refuses: the id names marker files',
    (executionId) => {
      expect(renderError(() => renderSshCommand(migrate, { version: '1' }, executionId, 1)).where).toBe('execution id');
    },
  );

  it.each([0, -1, 1.5, Number.NaN])('given attempt %s, then it refuses', (attempt) => {
    expect(renderError(() => renderSshCommand(migrate, { version: '1' }, EXECUTION, attempt)).where).toBe('attempt');
  });

  it('given an HTTP tool, then it refuses', () => {
    const http = { ...status, channel: 'http', request: { kind: 'http' } } as unknown as typeof status;

    expect(renderError(() => renderSshCommand(http, {}, EXECUTION, 1)).where).toBe('channel');
  });
});

describe('renderMarkerProbe', () => {
  it('given a remote command, then it runs the probe script on the marker directory and execution id', () => {
    expect(renderMarkerProbe(migrate, EXECUTION)).toBe(
      `/bin/sh -c ${shellQuote(MARKER_PROBE_SCRIPT)} oncegate-probe '/var/lib/oncegate/markers' '${EXECUTION}'`,
    );
  });

  it('given a tool without marker, then it refuses', () => {
    expect(renderError(() => renderMarkerProbe(status, EXECUTION)).where).toBe('marker');
  });
});
