import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from './cli';
import { EXIT_CODES, type CliCommand, type CliIo } from '@oncegate/service-host/cli-command';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const TYPOS = 'libs/contracts/fixtures/typos.yaml';

/** Real files from the workspace root, output captured in memory. */
function captureIo(): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readFile: (path) => readFile(resolve(ROOT, path), 'utf8'),
    out: () => out,
    err: () => err,
  };
}

describe('oncegate contracts check', () => {
  it('given the bundled examples, when checked, then it prints one summary line and exits 0', async () => {
    const io = captureIo();
    const code = await runCli(['contracts', 'check', 'examples/tools.yaml'], io);
    expect(io.err()).toBe('');
    expect(io.out()).toBe('examples/tools.yaml: 6 tools OK (read_only 1, idempotent_write 1, conditional_write 1, irreversible 2, remote_command 1)\n');
    expect(code).toBe(EXIT_CODES.ok);
  });

  it('given a file full of typos, when checked, then every issue is printed as file:line:column path: reason and it exits 1', async () => {
    const io = captureIo();
    const code = await runCli(['contracts', 'check', TYPOS], io);
    const lines = io.out().trimEnd().split('\n');
    expect(code).toBe(EXIT_CODES.failed);
    expect(lines).toEqual([
      `${TYPOS}:6:12 tools[0].class: 'read-only' is not allowed; expected one of: read_only, idempotent_write, conditional_write, irreversible, remote_command — did you mean 'read_only'?`,
      `${TYPOS}:14:7 tools[0].http.methd: unknown field 'methd' — did you mean 'method'?`,
      `${TYPOS}:15:12 tools[0].http.url: '{{args.buildid}}' refers to an argument input_schema.properties does not declare — did you mean 'build_id'?`,
      `${TYPOS}:16:5 tools[0].corelation_window: unknown field 'corelation_window' — did you mean 'correlation_window'?`,
      `${TYPOS}:32:9 tools[1].http.headers.Authorization: header 'Authorization' carries a credential; credentials come by reference only: name the credential in credential_ref and the gateway applies it at dispatch`,
      `${TYPOS}:35:36 tools[1].secret_arguments[1]: 'cvv' is not an argument in input_schema.properties`,
      `${TYPOS}:36:27 tools[1].durable_key_argument: 'card_token' is a secret argument; a secret must not be the durable key (the key is stored and shown)`,
      `${TYPOS}:37:25 tools[1].correlation_window: '5 minutes' is not a duration; write 500ms, 90s, 5m, 2h, 1d, 1h30m, or 0`,
      `${TYPOS}:38:5 tools[1].status_query: only a conditional_write has a status query; this tool is irreversible`,
      `${TYPOS}:42:5 tools[2].marker: missing required field 'marker': a remote command needs a durable marker to recover an unknown outcome`,
      `${TYPOS}:50:26 tools[2].input_schema.properties.version.type: invalid JSON Schema: must be equal to one of the allowed values: array, boolean, integer, null, number, object, string`,
      `${TYPOS}:54:17 tools[2].ssh.host_key: pin the full public key ('ssh-ed25519 AAAA...', as printed by ssh-keyscan), not its fingerprint`,
      `${TYPOS}:55:22 tools[2].ssh.argv[2]: a template must be a whole argv element, never spliced into 'migrate --to {{args.version}}': split it into separate elements`,
      `${TYPOS}:58:11 tools[3].name: duplicate tool name 'get_build' (first declared at tools[0], line 4)`,
      `${TYPOS}:65:7 tools[3].input_schema.proprties: unknown JSON Schema keyword 'proprties' — did you mean 'properties'?`,
    ]);
    expect(io.err()).toBe('15 problems in 1 file\n');
  });

  it('given a valid, an invalid and a missing file, when checked together, then each is reported and it exits 1', async () => {
    const io = captureIo();
    const code = await runCli(['contracts', 'check', 'examples/tools.yaml', TYPOS, 'examples/missing.yaml'], io);
    const lines = io.out().trimEnd().split('\n');
    expect(code).toBe(EXIT_CODES.failed);
    expect(lines[0]).toMatch(/^examples\/tools\.yaml: 6 tools OK/);
    expect(lines.at(-1)).toMatch(/^examples\/missing\.yaml: cannot read file: ENOENT/);
    expect(io.err()).toBe('16 problems in 2 files\n');
  });

  it('given no file or an unknown option, when run, then it is a usage error (exit 2)', async () => {
    const none = captureIo();
    expect(await runCli(['contracts', 'check'], none)).toBe(EXIT_CODES.usage);
    expect(none.err()).toMatch(/^oncegate: contracts check: name at least one contract file\n/);
    const option = captureIo();
    expect(await runCli(['contracts', 'check', '--strict', 'examples/tools.yaml'], option)).toBe(EXIT_CODES.usage);
    expect(option.err()).toMatch(/unknown option '--strict'/);
  });

  it('given serve without a service, or one that does not exist, when run, then it is a usage error naming the services', async () => {
    const none = captureIo();
    expect(await runCli(['serve'], none)).toBe(EXIT_CODES.usage);
    expect(none.err()).toMatch(/name one service: gateway, authorization, dispatcher-http, dispatcher-ssh, result-delivery, sealer, relay-kafka/);
    const typo = captureIo();
    expect(await runCli(['serve', 'dispatcher-htp'], typo)).toBe(EXIT_CODES.usage);
    expect(typo.err()).toMatch(/\(not 'dispatcher-htp'\)/);
    const two = captureIo();
    expect(await runCli(['serve', 'gateway', 'sealer'], two)).toBe(EXIT_CODES.usage);
  });

  it('given --help, when run, then the usage is printed and it exits 0', async () => {
    const io = captureIo();
    expect(await runCli(['contracts', 'check', '--help'], io)).toBe(EXIT_CODES.ok);
    expect(io.out()).toMatch(/^Usage: oncegate contracts check <file\.\.\.>/);
  });
});

describe('the command dispatcher', () => {
  it('given no arguments, when run, then it prints the command list on stderr and exits 2', async () => {
    const io = captureIo();
    expect(await runCli([], io)).toBe(EXIT_CODES.usage);
    expect(io.err()).toContain('contracts check');
  });

  it('given --help, when run, then it prints the command list on stdout and exits 0', async () => {
    for (const flag of ['--help', '-h', 'help']) {
      const io = captureIo();
      expect(await runCli([flag], io)).toBe(EXIT_CODES.ok);
      expect(io.out()).toMatch(/^Usage: oncegate <group> <command> \[args\]\n\nCommands:\n {2}init {2,}Create the data folder/);
      expect(io.out()).toMatch(/\n {2}start {2,}Run the gateway/);
      expect(io.out()).toMatch(/\n {2}agents add {2,}Issue an API token/);
      expect(io.out()).toMatch(/\n {2}contracts check {2,}Validate/);
      expect(io.out()).toMatch(/\n {2}audit verify {2,}Verify an exported journal offline/);
    }
  });

  it('given an unknown group or command, when run, then it names it with a suggestion and exits 2', async () => {
    const group = captureIo();
    expect(await runCli(['contract', 'check'], group)).toBe(EXIT_CODES.usage);
    expect(group.err()).toBe("oncegate: unknown command 'contract' — did you mean 'contracts'?\nRun 'oncegate --help' for the list of commands.\n");
    const command = captureIo();
    expect(await runCli(['contracts', 'chek'], command)).toBe(EXIT_CODES.usage);
    expect(command.err()).toBe("oncegate: unknown command 'contracts chek' — did you mean 'check'?\nRun 'oncegate contracts --help' for its commands.\n");
  });

  it('given a group without a command, when run, then it lists the group and exits 2', async () => {
    const io = captureIo();
    expect(await runCli(['contracts'], io)).toBe(EXIT_CODES.usage);
    expect(io.err()).toMatch(/^Usage: oncegate contracts <command> \[args\]/);
  });

  it('given another command registered, when run, then it is dispatched with its own arguments', async () => {
    const seen: string[][] = [];
    const exportCommand: CliCommand = {
      group: 'journal',
      name: 'export',
      summary: 'Write the journal as NDJSON.',
      usage: 'Usage: oncegate journal export',
      run: async (args) => {
        seen.push([...args]);
        return EXIT_CODES.ok;
      },
    };
    const io = captureIo();
    expect(await runCli(['journal', 'export', '--out', 'x.ndjson'], io, [exportCommand])).toBe(EXIT_CODES.ok);
    expect(seen).toEqual([['--out', 'x.ndjson']]);
  });
});
