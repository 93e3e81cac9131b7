import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXIT_CODES, type CliIo } from '@oncegate/host-cli';
import { runCli } from '../cli';

/**
 * A plugin channel's module as a team ships it (compiled JavaScript exporting its kit): its section check is what
 * `contracts check --channel` runs. Only what the CLI reads of a kit is here; the kit's own tests run real ones.
 */
const LEDGER_MODULE = `export const ledgerKit = {
  definition: {
    name: 'ledger',
    open() { throw new Error('not opened by a check'); },
    contract: {
      check(section, report) {
        if (typeof section.file !== 'string') report(['file'], 'the ledger file to write to (a path)');
        for (const key of Object.keys(section)) if (key !== 'file') report([key], \`unknown setting '\${key}' of the ledger channel\`);
      },
    },
  },
};
`;

/**
 * The same channel as a module built on the kit's schemas would publish it: its section and its options as JSON
 * Schemas, which the CLI checks with the kit's own reading of them.
 */
const LEDGER_SCHEMAS_MODULE = `export const ledgerKit = {
  definition: {
    name: 'ledger',
    open() { throw new Error('not opened by a check'); },
    contract: { schema: { type: 'object', additionalProperties: false, required: ['file'], properties: { file: { type: 'string' } } } },
    options: { schema: { type: 'object', additionalProperties: false, properties: { directory: { type: 'string' }, fsync: { type: 'boolean', default: true } } } },
  },
};
`;

const contract = (plugin: string) => `version: 1
tools:
  - name: record_entry
    description: Record one entry in the ledger.
    class: idempotent_write
    channel: ledger
    target: ledger/entries
    input_schema: { type: object, properties: { n: { type: integer } }, required: [n], additionalProperties: false }
    correlation_window: 10m
    plugin: ${plugin}
`;

describe('oncegate contracts check of the built-in mcp channel', () => {
  it('given an mcp tool whose section has a mistake, when checked without --channel, then the mistake is named at its line and column', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-contracts-mcp-'));
    try {
      const file = join(dir, 'tools.yaml');
      writeFileSync(
        file,
        `version: 1
tools:
  - name: desk_close_ticket
    description: Close a ticket.
    class: irreversible
    channel: mcp
    target: mcp/desk
    input_schema: { type: object, properties: { ticket_id: { type: string } }, required: [ticket_id], additionalProperties: false }
    correlation_window: 1d
    plugin: { upstream: desk, url: "http://127.0.0.1:8790/mcp", tol: close_ticket, definition: "sha256:${'0'.repeat(64)}" }
`,
      );
      let out = '';
      const io: CliIo = { stdout: (text) => void (out += text), stderr: () => undefined, readFile: (path) => readFile(path, 'utf8') };
      expect(await runCli(['contracts', 'check', file], io)).toBe(EXIT_CODES.failed);
      expect(out).toContain(`${file}:10:70 tools[0].plugin.tol: unknown field 'tol'; did you mean 'tool'?`);
      expect(out).toContain(`${file}:10:13 tools[0].plugin.tool: missing required field 'tool'`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('oncegate contracts check --channel', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-contracts-check-'));
    writeFileSync(join(dir, 'ledger-channel.mjs'), LEDGER_MODULE);
    writeFileSync(join(dir, 'ledger-schemas.mjs'), LEDGER_SCHEMAS_MODULE);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const captureIo = (): CliIo & { out: () => string; err: () => string } => {
    let out = '';
    let err = '';
    return { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readFile: (path) => readFile(path, 'utf8'), out: () => out, err: () => err };
  };

  it('given a plugin section the channel refuses, when checked with the channel, then each mistake is named at its line and column and it exits 1', async () => {
    const file = join(dir, 'tools.yaml');
    writeFileSync(file, contract('{ fiel: /var/lib/ledger.txt }'));
    const io = captureIo();
    const code = await runCli(['contracts', 'check', file, '--channel', join(dir, 'ledger-channel.mjs')], io);
    expect(io.out().trimEnd().split('\n')).toEqual([
      `${file}:10:13 tools[0].plugin.file: the ledger file to write to (a path)`,
      `${file}:10:21 tools[0].plugin.fiel: unknown setting 'fiel' of the ledger channel`,
    ]);
    expect(io.err()).toBe('2 problems in 1 file\n');
    expect(code).toBe(EXIT_CODES.failed);
  });

  it('given the same file without the channel, then it is OK but says its plugin section was not checked', async () => {
    const file = join(dir, 'tools.yaml');
    writeFileSync(file, contract('{ fiel: /var/lib/ledger.txt }'));
    const io = captureIo();
    expect(await runCli(['contracts', 'check', file], io)).toBe(EXIT_CODES.ok);
    expect(io.out()).toBe(`${file}: 1 tool OK (idempotent_write 1); the plugin: sections of channel ledger were not checked (--channel <its module>)\n`);
  });

  it('given a right section and the channel, then it is OK with no note', async () => {
    const file = join(dir, 'tools.yaml');
    writeFileSync(file, contract('{ file: /var/lib/ledger.txt }'));
    const io = captureIo();
    expect(await runCli(['contracts', 'check', file, '--channel', join(dir, 'ledger-channel.mjs')], io)).toBe(EXIT_CODES.ok);
    expect(io.out()).toBe(`${file}: 1 tool OK (idempotent_write 1)\n`);
  });

  it('given a module that cannot be loaded or exports no channel, then it is a usage error naming it', async () => {
    writeFileSync(join(dir, 'nothing.mjs'), 'export const answer = 42;\n');
    const file = join(dir, 'tools.yaml');
    writeFileSync(file, contract('{ file: x }'));
    for (const [module, said] of [
      [join(dir, 'missing.mjs'), /--channel .*missing\.mjs: cannot load it: /],
      [join(dir, 'nothing.mjs'), /--channel .*nothing\.mjs: it exports no channel \(a kit made by defineChannel of @oncegate\/dispatcher-kit\)/],
    ] as const) {
      const io = captureIo();
      expect(await runCli(['contracts', 'check', file, '--channel', module], io)).toBe(EXIT_CODES.usage);
      expect(io.err()).toMatch(said);
    }
  });

  describe('with --config', () => {
    const configuration = (lines: readonly string[]) => {
      const file = join(dir, 'oncegate.yaml');
      writeFileSync(file, ['data_dir: ./data', ...lines, ''].join('\n'));
      return file;
    };

    it("given a mistake in a tool's plugin section and one in the channel's entry of the configuration, then both are named at their line and column and it exits 1", async () => {
      const file = join(dir, 'tools.yaml');
      writeFileSync(file, contract('{ fiel: /var/lib/ledger.txt }'));
      const config = configuration(['channels:', '  ledger:', '    directry: /var/lib/ledger']);
      const io = captureIo();

      const code = await runCli(['contracts', 'check', file, '--channel', join(dir, 'ledger-schemas.mjs'), '--config', config], io);

      expect(io.out().trimEnd().split('\n')).toEqual([
        `${config}:4:5 channels.ledger.directry: unknown field 'directry'; did you mean 'directory'?`,
        `${file}:10:13 tools[0].plugin.file: missing required field 'file'`,
        `${file}:10:21 tools[0].plugin.fiel: unknown field 'fiel'; did you mean 'file'?`,
      ]);
      expect(io.err()).toBe('3 problems in 2 files\n');
      expect(code).toBe(EXIT_CODES.failed);
    });

    it("given right entries, then it is OK and says which channels' entries it could not check", async () => {
      const file = join(dir, 'tools.yaml');
      writeFileSync(file, contract('{ file: /var/lib/ledger.txt }'));
      const config = configuration(['channels:', '  ledger: { directory: /var/lib/ledger }', '  sql: { max_rows: 5 }']);
      const io = captureIo();

      expect(await runCli(['contracts', 'check', file, '--channel', join(dir, 'ledger-schemas.mjs'), '--config', config], io)).toBe(EXIT_CODES.ok);
      expect(io.out()).toBe(
        `${config}: configuration OK (options of channel ledger checked); channels.sql not checked (--channel <its module>)\n${file}: 1 tool OK (idempotent_write 1)\n`,
      );
    });

    it('given an entry for a channel that declares no options, then it is refused at its key', async () => {
      const file = join(dir, 'tools.yaml');
      writeFileSync(file, contract('{ file: /var/lib/ledger.txt }'));
      const config = configuration(['channels:', '  ledger: { directory: /var/lib/ledger }']);
      const io = captureIo();

      expect(await runCli(['contracts', 'check', file, '--channel', join(dir, 'ledger-channel.mjs'), '--config', config], io)).toBe(EXIT_CODES.failed);
      expect(io.out().split('\n')[0]).toBe(`${config}:3:3 channels.ledger: channel ledger takes no options; remove the entry`);
    });

    it('given a configuration with a mistake of its own, then it is named like any other', async () => {
      const file = join(dir, 'tools.yaml');
      writeFileSync(file, contract('{ file: /var/lib/ledger.txt }'));
      const config = configuration(['chanels: { ledger: {} }']);
      const io = captureIo();

      expect(await runCli(['contracts', 'check', file, '--config', config], io)).toBe(EXIT_CODES.failed);
      expect(io.out().split('\n')[0]).toBe(`${config}:2:1 chanels: unknown field 'chanels' — did you mean 'channels'?`);
    });
  });
});
