import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { describe, expect, it } from 'vitest';
import { oncegateProgram, runCli } from './cli';
import type { CliCommand } from './commands';
import { action, EXIT_CODES, type CliIo } from '@oncegate/host-cli';

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
    expect(io.out()).toBe(
      'examples/tools.yaml: 9 tools OK (read_only 2, idempotent_write 2, conditional_write 1, irreversible 3, remote_command 1), 3 from examples/upstream-desk.yaml\n',
    );
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
    expect(lines[0]).toMatch(/^examples\/tools\.yaml: 9 tools OK/);
    expect(lines.at(-1)).toMatch(/^examples\/missing\.yaml: cannot read file: ENOENT/);
    expect(io.err()).toBe('16 problems in 2 files\n');
  });

  it('given no file or an unknown option, when run, then it is a usage error (exit 2): one line, then the usage', async () => {
    const none = captureIo();
    expect(await runCli(['contracts', 'check'], none)).toBe(EXIT_CODES.usage);
    expect(none.err()).toBe(
      "oncegate: contracts check: missing required argument 'file'\n" +
        'Usage: oncegate contracts check [options] <file...>\n' +
        "Run 'oncegate contracts check --help' for its options.\n",
    );
    const option = captureIo();
    expect(await runCli(['contracts', 'check', '--strict', 'examples/tools.yaml'], option)).toBe(EXIT_CODES.usage);
    expect(option.err()).toMatch(/^oncegate: contracts check: unknown option '--strict'\n/);
  });

  it('given a file named after --, or -, when checked, then it is taken as a file and not as an option', async () => {
    const io = captureIo();
    expect(await runCli(['contracts', 'check', '--', '-'], io)).toBe(EXIT_CODES.failed);
    expect(io.out()).toMatch(/^-: cannot read file: ENOENT/);
  });

  it('given serve without a service, one that does not exist, or one named twice, when run, then it is a usage error naming the services', async () => {
    const none = captureIo();
    expect(await runCli(['serve'], none)).toBe(EXIT_CODES.usage);
    expect(none.err()).toMatch(/^oncegate: serve: missing required argument 'service'\nUsage: oncegate serve \[options\] <service\.\.\.>\n/);
    const typo = captureIo();
    expect(await runCli(['serve', 'dispatcher-htp'], typo)).toBe(EXIT_CODES.usage);
    expect(typo.err()).toMatch(
      /value 'dispatcher-htp' is invalid for argument 'service'\. Allowed choices are gateway, authorization, dispatcher-http, dispatcher-ssh, dispatcher-mcp, result-delivery, sealer, relay-kafka\./,
    );
    const typoOfTwo = captureIo();
    expect(await runCli(['serve', 'gateway', 'authorisation'], typoOfTwo)).toBe(EXIT_CODES.usage);
    expect(typoOfTwo.err()).toMatch(/value 'authorisation' is invalid for argument 'service'/);
    const twice = captureIo();
    expect(await runCli(['serve', 'gateway', 'authorization', 'gateway'], twice)).toBe(EXIT_CODES.usage);
    expect(twice.err()).toBe("oncegate: serve: 'gateway' is named twice\n");
  });

  it('given --help, when run, then the generated help is printed on stdout and it exits 0', async () => {
    const io = captureIo();
    expect(await runCli(['contracts', 'check', '--help'], io)).toBe(EXIT_CODES.ok);
    expect(io.out()).toMatch(/^Usage: oncegate contracts check \[options\] <file\.\.\.>\n\nValidates tool contract files/);
    expect(io.out()).toMatch(/\nArguments:\n {2}file {2,}contract files to check\n/);
    expect(io.err()).toBe('');
  });
});

/** `oncegate …` words of every command that runs (not a group), and of every group. */
async function commandPaths(): Promise<{ leaves: string[][]; groups: string[][] }> {
  const leaves: string[][] = [];
  const groups: string[][] = [];
  const walk = (command: CommandUnknownOpts, path: string[]) => {
    if (command.commands.length === 0) leaves.push(path);
    else if (path.length > 0) groups.push(path);
    for (const sub of command.commands) walk(sub, [...path, sub.name()]);
  };
  walk(await oncegateProgram(), []);
  return { leaves, groups };
}

describe('the command dispatcher', () => {
  it('given no arguments, when run, then it prints the help on stderr and exits 2', async () => {
    const io = captureIo();
    expect(await runCli([], io)).toBe(EXIT_CODES.usage);
    expect(io.err()).toMatch(/^Usage: oncegate <command> \[options\]\n/);
    expect(io.err()).toContain('contracts check');
    expect(io.out()).toBe('');
  });

  it('given --help, -h or help, when run, then it lists every command with its summary on stdout and exits 0', async () => {
    for (const flag of ['--help', '-h', 'help']) {
      const io = captureIo();
      expect(await runCli([flag], io)).toBe(EXIT_CODES.ok);
      expect(io.out()).toMatch(/^Usage: oncegate <command> \[options\]\n\n/);
      expect(io.out()).toMatch(/\nCommands:\n {2}init {2,}Create the data folder/);
      expect(io.out()).toMatch(/\n {2}start {2,}Run the gateway/);
      expect(io.out()).toMatch(/\n {2}agents add {2,}Issue an API token/);
      expect(io.out()).toMatch(/\n {2}contracts check {2,}Validate/);
      expect(io.out()).toMatch(/\n {2}audit verify {2,}Verify an exported journal offline/);
      expect(io.out()).toMatch(/\nRun 'oncegate <command> --help' for its arguments and options\.\n$/);
    }
  });

  it('given every command and group, when asked for --help, then each prints its generated help (usage, options with their descriptions) and exits 0', async () => {
    const { leaves, groups } = await commandPaths();
    expect(leaves.length).toBeGreaterThanOrEqual(33);
    for (const path of [...leaves, ...groups]) {
      const io = captureIo();
      expect(await runCli([...path, '--help'], io), path.join(' ')).toBe(EXIT_CODES.ok);
      expect(io.out(), path.join(' ')).toMatch(new RegExp(`^Usage: oncegate ${path.join(' ')} `));
      expect(io.out(), path.join(' ')).toMatch(/\nOptions:\n(.*\n)* {2}-h, --help {2,}display help for command\n/);
      expect(io.err()).toBe('');
    }
    for (const path of groups) {
      const io = captureIo();
      expect(await runCli(['help', ...path], io), path.join(' ')).toBe(EXIT_CODES.ok);
      expect(io.out()).toMatch(/\nCommands:\n/);
    }
  });

  it('given the help of commands with defaults, when printed, then each option shows its description and its default', async () => {
    const help = async (...args: string[]) => {
      const io = captureIo();
      expect(await runCli([...args, '--help'], io)).toBe(EXIT_CODES.ok);
      // Wrapped to the terminal's width: compared word by word.
      return io.out().replace(/\s+/g, ' ');
    };
    const set = await help('vault', 'set');
    expect(set).toContain(' --kind <kind> how the value is sent (choices: "bearer", "basic", "header", "ssh_key", "password") ');
    expect(set).toContain(' --by <name> who is recorded as acting, e.g. user:alice (default: "operator:cli") ');
    expect(set).toContain(' --config <file> the configuration file (default: $ONCEGATE_CONFIG, else ./oncegate.yaml) ');
    expect(set).not.toContain('--value');
    expect(await help('journal', 'export')).toContain(' --from <position> export the events after this global position (default: 0) ');
    expect(await help('review', 'resolve')).toContain(' --by <name> who is recorded as acting, e.g. user:alice (default: operator:<your login name>) ');
  });

  it('given an option no command has, when any command runs with it, then it exits 2 with one line naming it, the command\'s usage and where its help is', async () => {
    for (const path of (await commandPaths()).leaves) {
      const io = captureIo();
      expect(await runCli([...path, '--no-such-option'], io), path.join(' ')).toBe(EXIT_CODES.usage);
      const lines = io.err().split('\n');
      // A required option that is missing is said first.
      expect(lines[0]).toMatch(new RegExp(`^oncegate: ${path.join(' ')}: (unknown option '--no-such-option'|required option '[^']+' not specified)$`));
      expect(lines[1]).toMatch(new RegExp(`^Usage: oncegate ${path.join(' ')} \\[options\\]`));
      expect(lines.slice(2)).toEqual([`Run 'oncegate ${path.join(' ')} --help' for its options.`, '']);
      expect(io.out()).toBe('');
    }
  });

  it('given an option misspelt, when run, then the closest option is suggested', async () => {
    const io = captureIo();
    expect(await runCli(['approvals', 'list', '--jsn'], io)).toBe(EXIT_CODES.usage);
    expect(io.err()).toMatch(/^oncegate: approvals list: unknown option '--jsn' — did you mean '--json'\?\n/);
    const config = captureIo();
    expect(await runCli(['vault', 'status', '--confg', 'x.yaml'], config)).toBe(EXIT_CODES.usage);
    expect(config.err()).toMatch(/unknown option '--confg' — did you mean '--config'\?\n/);
  });

  it('given what may be a secret typed in the wrong place, when refused, then the refusal does not repeat it', async () => {
    const secret = 'pasted-secret-3f9c';
    for (const args of [
      ['vault', 'set', 'demo-writer', secret, '--kind', 'bearer', '--bind', 'api.example.com'],
      ['vault', 'set', 'demo-writer', '--kind', 'bearer', '--bind', 'api.example.com', `--valeu=${secret}`],
      ['approvers', 'add', 'alice', secret],
      ['vault', 'set', 'demo-writer', `${secret}\n${secret}`, '--kind', 'bearer', '--bind', 'api.example.com'],
      ['vault', 'set', 'demo-writer', '--kind', 'bearer', '--bind', 'api.example.com', `--valeu=${secret}\n${secret}`],
    ]) {
      const io = captureIo();
      expect(await runCli(args, io), args.join(' ')).toBe(EXIT_CODES.usage);
      expect(io.err()).toMatch(/^oncegate: \w+ \w+: (too many arguments for '\w+'\. Expected 1 argument but got 2\.|unknown option '--valeu=…')\n/);
      expect(io.err() + io.out()).not.toContain(secret);
    }
  });

  it('given an unknown group or command, when run, then it names it with a suggestion and exits 2', async () => {
    const group = captureIo();
    expect(await runCli(['contract', 'check'], group)).toBe(EXIT_CODES.usage);
    expect(group.err()).toBe("oncegate: unknown command 'contract' — did you mean 'contracts'?\nUsage: oncegate <command> [options]\nRun 'oncegate --help' for its commands.\n");
    const command = captureIo();
    expect(await runCli(['contracts', 'chek'], command)).toBe(EXIT_CODES.usage);
    expect(command.err()).toBe(
      "oncegate: contracts: unknown command 'chek' — did you mean 'check'?\nUsage: oncegate contracts <command> [options]\nRun 'oncegate contracts --help' for its commands.\n",
    );
  });

  it('given a group without a command, when run, then it prints the help of the group on stderr and exits 2', async () => {
    const io = captureIo();
    expect(await runCli(['contracts'], io)).toBe(EXIT_CODES.usage);
    expect(io.err()).toMatch(/^Usage: oncegate contracts <command> \[options\]\n/);
    expect(io.err()).toMatch(/\n {2}check \[options\] <file\.\.\.> {2,}Validate tool contract files/);
  });

  it('given another command registered, when run, then its action gets its own arguments and options and its exit code is the run\'s', async () => {
    const seen: unknown[] = [];
    const journal = () =>
      new Command('journal').addCommand(
        new Command('export')
          .argument('[what...]')
          .option('--out <file>')
          .action(
            action(async (io, what, options) => {
              seen.push({ what, options });
              io.stdout('exported\n');
              return EXIT_CODES.failed;
            }),
          ),
      );
    const io = captureIo();
    expect(await runCli(['journal', 'export', 'all', '--out', 'x.ndjson'], io, [{ name: 'journal', load: async () => journal }])).toBe(EXIT_CODES.failed);
    expect(seen).toEqual([{ what: ['all'], options: { out: 'x.ndjson' } }]);
    expect(io.out()).toBe('exported\n');
  });

  it("given several commands, when one is run, then only its module is loaded; the program's help and a name it does not know load them all", async () => {
    const loaded: string[] = [];
    const command = (name: string): CliCommand => ({
      name,
      load: async () => {
        loaded.push(name);
        return () => new Command(name).description(`the ${name} command`).action(action(async () => EXIT_CODES.ok));
      },
    });
    const commands = [command('first'), command('second'), command('third')];

    expect(await runCli(['second'], captureIo(), commands)).toBe(EXIT_CODES.ok);
    expect(loaded).toEqual(['second']);

    loaded.length = 0;
    const help = captureIo();
    expect(await runCli(['--help'], help, commands)).toBe(EXIT_CODES.ok);
    expect(loaded).toEqual(['first', 'second', 'third']);
    expect(help.out()).toMatch(/\n {2}first {2,}the first command\n {2}second {2,}the second command\n {2}third {2,}the third command\n/);

    loaded.length = 0;
    const typo = captureIo();
    expect(await runCli(['secnd'], typo, commands)).toBe(EXIT_CODES.usage);
    expect(loaded).toEqual(['first', 'second', 'third']);
    expect(typo.err()).toMatch(/^oncegate: unknown command 'secnd' — did you mean 'second'\?/);
  });
});
