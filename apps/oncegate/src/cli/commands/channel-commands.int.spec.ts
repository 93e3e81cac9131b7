import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXIT_CODES, type CliIo } from '@oncegate/host-cli';
import { runCli } from '../cli';

/** The SQL channel's module, as a team's channel module is named: a path from the working directory (the repository). */
const SQL_MODULE = './apps/dispatcher-sql/src/sql-channel.ts';

describe('oncegate channels schema', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-channels-schema-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const captureIo = (): CliIo & { out: () => string; err: () => string } => {
    let out = '';
    let err = '';
    return { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readFile: (path) => readFile(path, 'utf8'), out: () => out, err: () => err };
  };

  it("given the SQL channel's module, then it prints one line of JSON: the schemas of its tools' plugin section and of its options", async () => {
    const io = captureIo();

    expect(await runCli(['channels', 'schema', SQL_MODULE], io)).toBe(EXIT_CODES.ok);

    const lines = io.out().trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const published = JSON.parse(lines[0]!) as { channel: string; section: Record<string, unknown>; options: Record<string, unknown> };
    expect(published.channel).toBe('sql');
    expect(published.section).toMatchObject({ type: 'object', additionalProperties: false, required: ['host', 'port', 'database', 'user', 'statement'] });
    expect(published.options).toMatchObject({ type: 'object', additionalProperties: false, properties: { max_rows: { type: 'integer', default: 1000 } } });
    // What an editor or another tool does with them: a schema that takes a right section and refuses a misspelt field.
    const section = new Ajv({ strict: false }).compile(published.section);
    expect(section({ host: 'db.example.com', port: 5432, database: 'shop', user: 'shop_writer', statement: 'SELECT 1' })).toBe(true);
    expect(section({ host: 'db.example.com', port: 5432, database: 'shop', user: 'shop_writer', statment: 'SELECT 1' })).toBe(false);
    expect(io.err()).toBe('');
  });

  it('given a module exporting two channels, one checked by code alone and without options, then one line each, with null for what a channel declares none of', async () => {
    writeFileSync(
      join(dir, 'two.mjs'),
      `export const a = { definition: { name: 'ledger', open() {}, contract: { check() {} } } };
export const b = { definition: { name: 'queue', open() {}, options: { schema: { type: 'object', properties: { depth: { type: 'integer' } } } } } };
`,
    );
    const io = captureIo();

    expect(await runCli(['channels', 'schema', join(dir, 'two.mjs')], io)).toBe(EXIT_CODES.ok);
    expect(io.out().trimEnd().split('\n').map((line) => JSON.parse(line) as unknown)).toEqual([
      { channel: 'ledger', section: null, options: null },
      { channel: 'queue', section: null, options: { type: 'object', properties: { depth: { type: 'integer' } } } },
    ]);
  });

  it('given a module that exports no channel, then it is a usage error naming it', async () => {
    writeFileSync(join(dir, 'nothing.mjs'), 'export const answer = 42;\n');
    const io = captureIo();

    expect(await runCli(['channels', 'schema', join(dir, 'nothing.mjs')], io)).toBe(EXIT_CODES.usage);
    expect(io.err()).toMatch(/nothing\.mjs: it exports no channel \(a kit made by defineChannel of @oncegate\/dispatcher-kit\)\n$/);
  });
});
