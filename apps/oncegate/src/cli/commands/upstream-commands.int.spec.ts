import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { definitionDigest, UPSTREAM_SECTION_SCHEMA } from '@oncegate/mcp-upstream';
import { serveUpstream, type FixtureTool, type FixtureUpstream } from './fixtures/upstream-server';

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const LAUNCHER = join(ROOT, 'bin/oncegate.mjs');
const STDIO_UPSTREAM = fileURLToPath(new URL('./fixtures/stdio-upstream.ts', import.meta.url));
const TOKEN = 'desk-token-canary-7d1e3f05';

/** A ticket desk: a read, an idempotent write, a destructive call, one without hints, one whose name needs mending, one whose schema the format refuses. */
const DESK: readonly FixtureTool[] = [
  {
    name: 'list_tickets',
    title: 'List tickets',
    description: 'List the tickets, by status.',
    inputSchema: { type: 'object', properties: { status: { type: 'string', enum: ['open', 'closed'] } }, additionalProperties: false },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'set_ticket_priority',
    description: 'Set the priority of a ticket.',
    inputSchema: { type: 'object', properties: { id: { type: 'string' }, priority: { type: 'string', enum: ['low', 'normal', 'high'] } }, required: ['id', 'priority'] },
    annotations: { idempotentHint: true, destructiveHint: false },
  },
  {
    name: 'close_ticket',
    description: 'Close a ticket.',
    inputSchema: { type: 'object', properties: { id: { type: 'string' }, reason: { type: 'string' } }, required: ['id'] },
    annotations: { destructiveHint: true },
  },
  { name: 'notify', description: 'Send a notice to the desk.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'ticket.history', description: 'The history of a ticket.', inputSchema: { type: 'object', properties: { id: { type: 'string' } } }, annotations: { readOnlyHint: true } },
  { name: 'export', description: 'Export tickets.', inputSchema: { type: 'object', properties: { 'date.from': { type: 'string' } } }, annotations: { readOnlyHint: true } },
];

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

interface WrittenEntry {
  readonly name: string;
  readonly description: string;
  readonly class: string;
  readonly channel: string;
  readonly target: string;
  readonly credential_ref?: string;
  readonly input_schema: Record<string, unknown>;
  readonly correlation_window: string;
  readonly plugin: Record<string, unknown>;
}

const sectionValid = new Ajv({ allErrors: true }).compile(UPSTREAM_SECTION_SCHEMA);

// Each test runs the CLI as a process a few times, and a stdio upstream is started twice per listing (the probe of
// the revision, then the session): longer than most tests.
describe('oncegate upstream (the real CLI, real upstream MCP servers on the official SDKs)', { timeout: 90_000 }, () => {
  let dir: string;
  let tools: FixtureTool[];
  let upstream: FixtureUpstream;
  const outputs: string[] = [];

  /** `oncegate <args>` in the test's folder, with `env` added. */
  function oncegate(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
    const child = spawn(process.execPath, [LAUNCHER, ...args], { cwd: dir, env: { ...process.env, ONCEGATE_CONFIG: undefined, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += String(chunk)));
    child.stderr.on('data', (chunk) => (stderr += String(chunk)));
    child.stdin.end();
    return new Promise((resolve) =>
      child.once('close', (code) => {
        outputs.push(stdout, stderr);
        resolve({ code, stdout, stderr });
      }),
    );
  }

  const fileOf = (name: string) => join(dir, name);
  const entriesOf = (name: string) => (parse(readFileSync(fileOf(name), 'utf8')) as { tools: WrittenEntry[] }).tools;
  const tool = (name: string) => tools.find((each) => each.name === name)!;

  /** A loopback port nothing listens on (not 9 or another port fetch refuses before trying). */
  let closedPort: number;

  beforeAll(async () => {
    upstream = await serveUpstream(() => tools);
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    closedPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  });
  afterAll(async () => {
    await upstream.close();
    // Nothing a test gave as a credential reached any output.
    for (const output of outputs) expect(output).not.toContain(TOKEN);
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-upstream-'));
    tools = DESK.map((each) => structuredClone(each));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  describe('add', () => {
    it('given a Streamable HTTP upstream, when added, then upstream-<name>.yaml holds one tool per upstream tool, named, classed and digested, and passes the check', async () => {
      const run = await oncegate(['upstream', 'add', 'desk', '--url', upstream.url]);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);

      const [modeline = '', ...rest] = readFileSync(fileOf('upstream-desk.yaml'), 'utf8').split('\n');
      const schema = /^# yaml-language-server: \$schema=(\S+)$/.exec(modeline)?.[1];
      expect(schema && resolve(dir, schema)).toBe(join(ROOT, 'schemas/tools.schema.json'));
      const text = rest.join('\n');
      expect(text).toMatch(new RegExp(`^# Tools of the upstream MCP server 'desk' at ${upstream.url.replaceAll('/', '\\/')} \\(ticket-desk-fixture 1\\.0\\.0, MCP 2026-07-28\\),\\n# written by \`oncegate upstream add\` on \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z`));
      expect(text).toContain('# Meant to be edited');
      const entries = entriesOf('upstream-desk.yaml');
      expect(entries.map((entry) => [entry.name, entry.class, entry.correlation_window])).toEqual([
        ['desk_list_tickets', 'read_only', '30s'],
        ['desk_set_ticket_priority', 'idempotent_write', '5m'],
        ['desk_close_ticket', 'irreversible', '1d'],
        ['desk_notify', 'irreversible', '1d'],
        ['desk_ticket_history', 'read_only', '30s'],
      ]);
      for (const entry of entries) {
        const upstreamTool = tool(entry.plugin['tool'] as string);
        expect(entry).toMatchObject({ channel: 'mcp', target: 'mcp/desk', description: upstreamTool.description, input_schema: upstreamTool.inputSchema });
        expect(entry.plugin).toEqual({ upstream: 'desk', url: upstream.url, tool: upstreamTool.name, definition: definitionDigest(upstreamTool) });
        expect(sectionValid(entry.plugin), JSON.stringify(sectionValid.errors)).toBe(true);
        expect(entry).not.toHaveProperty('credential_ref');
      }
      expect(entries[0]).toMatchObject({ title: 'List tickets' });

      expect(run.stdout.split('\n')).toEqual([
        'wrote upstream-desk.yaml: 5 tools of desk (ticket-desk-fixture 1.0.0, MCP 2026-07-28)',
        '  read_only 2: desk_list_tickets, desk_ticket_history',
        '  idempotent_write 1: desk_set_ticket_priority',
        '  irreversible 2: desk_close_ticket, desk_notify',
        'left out 1: the contract format refuses them (fix the upstream\'s definition, or write the entry by hand)',
        `  export: input_schema.properties["date.from"]: argument name 'date.from' must not contain '.': fingerprint paths are dotted`,
        'serve it: add   include: [upstream-desk.yaml]   to your contract file (contracts: in oncegate.yaml), check it with oncegate contracts check <that file>, and restart the gateway',
        'review it (classes, windows, approval: per_use where a person should decide), then: oncegate upstream diff desk tells when the server changes',
        '',
      ]);

      const checked = await oncegate(['contracts', 'check', 'upstream-desk.yaml']);
      expect(checked.stdout).toBe('upstream-desk.yaml: 5 tools OK (read_only 2, idempotent_write 1, irreversible 2)\n');
      expect(checked.code).toBe(0);
    });

    it('given --out, --class, --only and --credential, then the classes are the operator\'s (marked), only those tools are written, each with the credential, and the vault line is printed', async () => {
      const run = await oncegate(['upstream', 'add', 'desk', '--url', upstream.url, '--out', 'desk.yaml', '--only', 'list_tickets', 'close_ticket', '--class', 'close_ticket=idempotent_write', '--credential', 'desk-api']);
      expect(run.code).toBe(0);
      const entries = entriesOf('desk.yaml');
      expect(entries.map((entry) => [entry.name, entry.class, entry.correlation_window, entry.credential_ref])).toEqual([
        ['desk_list_tickets', 'read_only', '30s', 'desk-api'],
        ['desk_close_ticket', 'idempotent_write', '5m', 'desk-api'],
      ]);
      expect(readFileSync(fileOf('desk.yaml'), 'utf8')).toContain('    class: idempotent_write # override: kept by oncegate upstream accept\n');
      expect(run.stdout).toContain('  idempotent_write 1: desk_close_ticket (--class)\n');
      const port = new URL(upstream.url).port;
      expect(run.stdout).toMatch(new RegExp(`credential: the gateway sends 'desk-api' from the vault to 127\\.0\\.0\\.1:${port} \\(not used for this listing: [^)]+\\); store it there once`));
      expect(run.stdout).toContain(`  oncegate vault set desk-api --kind password --bind 127.0.0.1:${port} --from-env <VARIABLE>\n`);
    });

    it('given a configuration whose contract file includes the written file, then the check of that file takes the upstream tools beside its own', async () => {
      writeFileSync(fileOf('oncegate.yaml'), `data_dir: ${join(dir, 'data')}\ncontracts: ${join(dir, 'contracts', 'tools.yaml')}\n`);
      const add = ['upstream', 'add', 'desk', '--url', upstream.url, '--out', join('contracts', 'upstream-desk.yaml'), '--config', 'oncegate.yaml'];
      const noFolder = await oncegate(add);
      expect([noFolder.code, noFolder.stderr]).toEqual([1, 'cannot write contracts/upstream-desk.yaml: no such folder\n']);

      mkdirSync(fileOf('contracts'));
      const added = await oncegate(add);
      expect(added.stdout).toContain(`serve it: add   include: [upstream-desk.yaml]   to contracts/tools.yaml, check it with oncegate contracts check contracts/tools.yaml, and restart the gateway\n`);
      writeFileSync(
        fileOf('contracts/tools.yaml'),
        [
          'version: 1',
          'include: [upstream-desk.yaml]',
          'tools:',
          '  - name: get_build',
          '    description: Read a build.',
          '    class: read_only',
          '    channel: http',
          '    target: demo/builds',
          '    input_schema: { type: object, properties: { id: { type: string } }, required: [id] }',
          '    http: { method: GET, url: "http://127.0.0.1:8790/builds/{{args.id}}" }',
          '    correlation_window: 30s',
          '',
        ].join('\n'),
      );
      const checked = await oncegate(['contracts', 'check', 'contracts/tools.yaml']);
      expect(checked.stdout).toBe(
        'contracts/tools.yaml: 6 tools OK (read_only 3, idempotent_write 1, irreversible 2), 5 from contracts/upstream-desk.yaml\n',
      );
    });

    it('given a Streamable HTTP upstream on the v1 SDK, then the listing falls back to 2025-11-25 and the file is the same', async () => {
      const legacy = await serveUpstream(() => tools, { legacy: true });
      try {
        const run = await oncegate(['upstream', 'add', 'desk', '--url', legacy.url]);
        expect(run.stderr).toBe('');
        expect(run.stdout.split('\n')[0]).toBe('wrote upstream-desk.yaml: 5 tools of desk (ticket-desk-fixture 1.0.0, MCP 2025-11-25)');
        expect(entriesOf('upstream-desk.yaml').map((entry) => [entry.name, entry.plugin['definition']])).toEqual(
          DESK.filter((each) => each.name !== 'export').map((each) => [`desk_${each.name.replace('.', '_')}`, definitionDigest(each)]),
        );
      } finally {
        await legacy.close();
      }
    });

    it('given a stdio command with --env and --cwd, then the upstream is started for the listing (2025-11-25 on the v1 SDK) and the file names its command', async () => {
      writeFileSync(fileOf('tools.json'), JSON.stringify(DESK.slice(0, 3)));
      const command = [process.execPath, '--import', 'tsx', STDIO_UPSTREAM, fileOf('tools.json')];
      const run = await oncegate(['upstream', 'add', 'desk-stdio', '--env', 'UPSTREAM_NOTE=(from the desk)', '--cwd', ROOT, '--', ...command]);
      expect(run.stderr).toBe('');
      expect(run.stdout.split('\n')[0]).toBe('wrote upstream-desk-stdio.yaml: 3 tools of desk-stdio (ticket-desk-stdio-fixture 1.0.0, MCP 2025-11-25)');
      const entries = entriesOf('upstream-desk-stdio.yaml');
      expect(entries.map((entry) => [entry.name, entry.class, entry.description])).toEqual([
        ['desk-stdio_list_tickets', 'read_only', 'List the tickets, by status. (from the desk)'],
        ['desk-stdio_set_ticket_priority', 'idempotent_write', 'Set the priority of a ticket. (from the desk)'],
        ['desk-stdio_close_ticket', 'irreversible', 'Close a ticket. (from the desk)'],
      ]);
      for (const entry of entries) {
        expect(entry.plugin).toMatchObject({ upstream: 'desk-stdio', command, env: { UPSTREAM_NOTE: '(from the desk)' }, cwd: ROOT, definition: definitionDigest(tool(entry.plugin['tool'] as string)) });
        expect(sectionValid(entry.plugin), JSON.stringify(sectionValid.errors)).toBe(true);
      }
      expect((await oncegate(['contracts', 'check', 'upstream-desk-stdio.yaml'])).code).toBe(0);
    });

    it('given an upstream that wants a credential, then the one in the vault is sent for the listing, and none of it is printed', async () => {
      const guarded = await serveUpstream(() => tools, { token: TOKEN });
      try {
        writeFileSync(fileOf('oncegate.yaml'), `data_dir: ${join(dir, 'data')}\n`);
        const master = { ONCEGATE_MASTER_KEY: 'a master key for the upstream tests' };
        const refused = await oncegate(['upstream', 'add', 'desk', '--url', guarded.url, '--credential', 'desk-api', '--config', 'oncegate.yaml'], master);
        const port = new URL(guarded.url).port;
        expect(refused.stderr).toBe(
          `${guarded.url} answered HTTP 401: it wants a credential it was not given; store 'desk-api' in the vault first: oncegate vault set desk-api --kind password --bind 127.0.0.1:${port} --from-env <VARIABLE>\n`,
        );
        expect(refused.code).toBe(1);
        expect(existsSync(fileOf('upstream-desk.yaml'))).toBe(false);

        expect((await oncegate(['vault', 'init', '--config', 'oncegate.yaml'], master)).code).toBe(0);
        const stored = await oncegate(['vault', 'set', 'desk-api', '--kind', 'password', '--bind', `127.0.0.1:${port}`, '--from-env', 'DESK_TOKEN', '--config', 'oncegate.yaml'], { ...master, DESK_TOKEN: TOKEN });
        expect(stored.code).toBe(0);
        guarded.authorizations.length = 0;
        const added = await oncegate(['upstream', 'add', 'desk', '--url', guarded.url, '--credential', 'desk-api', '--config', 'oncegate.yaml'], master);
        expect(added.code).toBe(0);
        expect(added.stdout).toContain("credential: 'desk-api' from the vault (it was used for this listing too)\n");
        expect(guarded.authorizations.length).toBeGreaterThan(0);
        expect(new Set(guarded.authorizations)).toEqual(new Set([`Bearer ${TOKEN}`]));
        expect(readFileSync(fileOf('upstream-desk.yaml'), 'utf8')).not.toContain(TOKEN);
      } finally {
        await guarded.close();
      }
    });

    it('given bad input, then each is refused in one line that says why, and nothing is written', async () => {
      const unreachable = await oncegate(['upstream', 'add', 'desk', '--url', `http://127.0.0.1:${closedPort}/mcp`]);
      expect([unreachable.code, unreachable.stderr]).toEqual([1, `cannot reach http://127.0.0.1:${closedPort}/mcp: connection refused (is the server running?)\n`]);

      const exits = await oncegate(['upstream', 'add', 'desk', '--', process.execPath, '-e', 'console.error("desk: no database configured"); process.exit(3)']);
      expect(exits.code).toBe(1);
      expect(exits.stderr).toMatch(/^'.*node.* -e console\.error\("desk: no database configured"\); process\.exit\(3\)' exited before it listed its tools: desk: no database configured\n$/);

      const missing = await oncegate(['upstream', 'add', 'desk', '--command', 'oncegate-no-such-upstream']);
      expect([missing.code, missing.stderr]).toEqual([1, "cannot start 'oncegate-no-such-upstream': no such command (or no such working directory)\n"]);

      const unknownTool = await oncegate(['upstream', 'add', 'desk', '--url', upstream.url, '--class', 'reopen_ticket=read_only']);
      expect(unknownTool.code).toBe(2);
      expect(unknownTool.stderr.split('\n')[0]).toBe(
        "oncegate: upstream add: --class names a tool the upstream does not list: 'reopen_ticket' (it lists list_tickets, set_ticket_priority, close_ticket, notify, ticket.history, export)",
      );

      const badClass = await oncegate(['upstream', 'add', 'desk', '--url', upstream.url, '--class', 'close_ticket=conditional_write']);
      expect(badClass.code).toBe(2);
      expect(badClass.stderr.split('\n')[0]).toBe(
        'oncegate: upstream add: --class close_ticket=conditional_write: conditional_write needs a status query or a marker on the target, which an MCP server does not offer; an upstream tool is read_only, idempotent_write, irreversible',
      );

      for (const [args, said] of [
        [['Desk', '--url', upstream.url], "'Desk' is not an upstream name"],
        [['desk'], 'name the upstream by --url <Streamable HTTP URL> or by its command'],
        [['desk', '--url', 'http://user:secret-pass@127.0.0.1:9/mcp'], '--url carries user info (user:password@)'],
        [['desk', '--command', 'node', 'x.js', '--credential', 'desk-api'], '--credential is bound to the host of a --url upstream'],
      ] as const) {
        const run = await oncegate(['upstream', 'add', ...args]);
        expect(run.code).toBe(2);
        expect(run.stderr).toContain(said);
        expect(run.stderr).not.toContain('secret-pass');
      }
      expect(existsSync(fileOf('upstream-desk.yaml'))).toBe(false);

      writeFileSync(fileOf('upstream-desk.yaml'), '# mine\n');
      const exists = await oncegate(['upstream', 'add', 'desk', '--url', upstream.url]);
      expect([exists.code, exists.stderr]).toEqual([1, 'upstream-desk.yaml exists: nothing was written (--force replaces it; oncegate upstream diff desk --contracts upstream-desk.yaml compares it with the server)\n']);
      expect(readFileSync(fileOf('upstream-desk.yaml'), 'utf8')).toBe('# mine\n');
      expect((await oncegate(['upstream', 'add', 'desk', '--url', upstream.url, '--force'])).code).toBe(0);
      expect(entriesOf('upstream-desk.yaml')).toHaveLength(5);
    });
  });

  describe('diff and accept', () => {
    /** The upstream changes: a schema, an annotation (idempotent → destructive), a tool added, a tool removed. */
    function changeUpstream(): void {
      (tool('list_tickets').inputSchema['properties'] as Record<string, unknown>)['status'] = { type: 'string', enum: ['open', 'closed', 'waiting'] };
      (tool('list_tickets').inputSchema['properties'] as Record<string, unknown>)['limit'] = { type: 'integer', minimum: 1 };
      (tool('set_ticket_priority') as { annotations: unknown }).annotations = { idempotentHint: false, destructiveHint: true };
      tools = tools.filter((each) => each.name !== 'notify');
      tools.push({ name: 'reopen_ticket', description: 'Reopen a closed ticket.', inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }, annotations: { idempotentHint: true } });
    }

    it('given the file as written, then diff finds nothing and exits 0; after the upstream changes, it names each difference and exits 1', async () => {
      expect((await oncegate(['upstream', 'add', 'desk', '--url', upstream.url])).code).toBe(0);
      const same = await oncegate(['upstream', 'diff', 'desk']);
      expect(same.stdout.split('\n')).toEqual([
        `left out export: not in the contract, which refuses it (input_schema.properties["date.from"]: argument name 'date.from' must not contain '.': fingerprint paths are dotted)`,
        'upstream-desk.yaml: the 5 tools of desk match the live server (6 listed)',
        '',
      ]);
      expect(same.code).toBe(0);

      changeUpstream();
      const changed = await oncegate(['upstream', 'diff', 'desk']);
      expect(changed.code).toBe(1);
      expect(changed.stdout.split('\n')).toEqual([
        `left out export: not in the contract, which refuses it (input_schema.properties["date.from"]: argument name 'date.from' must not contain '.': fingerprint paths are dotted)`,
        'added    reopen_ticket: not in the contract (its annotations give idempotent_write); accept --add takes it',
        'removed  notify: the upstream no longer lists it (desk_notify in upstream-desk.yaml); accept --remove drops it',
        'changed  list_tickets: its definition is not the one desk_list_tickets in upstream-desk.yaml was written against',
        '  input_schema:',
        '    ~ /properties/status/enum: ["open","closed"] → ["open","closed","waiting"]',
        '    + /properties/limit: {"type":"integer","minimum":1}',
        '  class: read_only, as before',
        'changed  set_ticket_priority: its definition is not the one desk_set_ticket_priority in upstream-desk.yaml was written against',
        '  annotations:',
        '    ~ /destructiveHint: false → true',
        '    ~ /idempotentHint: true → false',
        '  class: the new annotations give irreversible (the file has idempotent_write); accept sets irreversible',
        '1 added, 1 removed, 2 changed, 2 unchanged: oncegate upstream accept desk rewrites the changed ones (--add, --remove for the others)',
        '',
      ]);
    });

    it('given an unreachable upstream or a file without its tools, then diff exits 2 saying why', async () => {
      writeFileSync(fileOf('upstream-gone.yaml'), readFileSync(join(ROOT, 'test/support/test-tools.yaml'), 'utf8'));
      const none = await oncegate(['upstream', 'diff', 'gone']);
      expect([none.code, none.stderr]).toEqual([2, "upstream-gone.yaml: no tool of the upstream 'gone' (channel: mcp, plugin.upstream: gone)\n"]);
      const missing = await oncegate(['upstream', 'diff', 'desk', '--contracts', 'nowhere.yaml']);
      expect([missing.code, missing.stderr]).toEqual([2, "nowhere.yaml: no such file (--contracts names the contract file that holds desk's tools)\n"]);

      expect((await oncegate(['upstream', 'add', 'desk', '--url', upstream.url])).code).toBe(0);
      writeFileSync(fileOf('upstream-desk.yaml'), readFileSync(fileOf('upstream-desk.yaml'), 'utf8').replaceAll(upstream.url, `http://127.0.0.1:${closedPort}/mcp`));
      const unreachable = await oncegate(['upstream', 'diff', 'desk']);
      expect([unreachable.code, unreachable.stderr]).toEqual([2, `cannot reach http://127.0.0.1:${closedPort}/mcp: connection refused (is the server running?)\n`]);
    });

    it("given the operator's edits, when accepted, then only the changed tools' schema, digest and class are rewritten, comments and overrides kept; new and gone tools only when asked", async () => {
      expect((await oncegate(['upstream', 'add', 'desk', '--url', upstream.url, '--class', 'list_tickets=idempotent_write'])).code).toBe(0);
      // The operator's own edits: a comment, a description, a window, an approval.
      const edited = readFileSync(fileOf('upstream-desk.yaml'), 'utf8')
        .replace('tools:\n', 'tools:\n  # reviewed by the desk team on 2026-12-01\n')
        .replace('    description: Close a ticket.\n', '    description: Close a ticket (it cannot be reopened by the agent).\n    approval: per_use   # a person decides\n')
        .replace("    description: Set the priority of a ticket.\n", '    description: Set the priority of a ticket.   # keep it short\n');
      writeFileSync(fileOf('upstream-desk.yaml'), edited);
      changeUpstream();

      const accepted = await oncegate(['upstream', 'accept', 'desk']);
      expect(accepted.stderr).toBe('');
      expect(accepted.stdout.split('\n')).toEqual([
        'accepted list_tickets: desk_list_tickets in upstream-desk.yaml takes the live input schema and definition; class idempotent_write kept (override; the annotations give read_only)',
        'accepted set_ticket_priority: desk_set_ticket_priority in upstream-desk.yaml takes the live input schema and definition; class idempotent_write → irreversible, correlation_window 5m → 1d',
        'kept     desk_notify in upstream-desk.yaml: the upstream no longer lists notify (--remove drops the entry)',
        `left out export: the contract format refuses it (input_schema.properties["date.from"]: argument name 'date.from' must not contain '.': fingerprint paths are dotted)`,
        'not added reopen_ticket: new on the upstream (its annotations give idempotent_write; --add writes it)',
        '',
      ]);
      const after = readFileSync(fileOf('upstream-desk.yaml'), 'utf8');
      expect(after).toContain('  # reviewed by the desk team on 2026-12-01\n');
      expect(after).toContain('    approval: per_use   # a person decides\n');
      expect(after).toContain('    description: Set the priority of a ticket.   # keep it short\n');
      expect(after).toContain('    class: idempotent_write # override: kept by oncegate upstream accept\n');
      // Every line outside the two changed tools is as it was.
      const outside = (text: string) => text.split('\n  - ').filter((block) => !/name: desk_(list_tickets|set_ticket_priority)\n/.test(block)).join('\n  - ');
      expect(outside(after)).toBe(outside(edited));
      const entries = entriesOf('upstream-desk.yaml');
      const byName = new Map(entries.map((entry) => [entry.name, entry]));
      expect(byName.get('desk_list_tickets')).toMatchObject({ class: 'idempotent_write', input_schema: tool('list_tickets').inputSchema, plugin: { definition: definitionDigest(tool('list_tickets')) } });
      expect(byName.get('desk_set_ticket_priority')).toMatchObject({ class: 'irreversible', correlation_window: '1d', plugin: { definition: definitionDigest(tool('set_ticket_priority')) } });
      expect(byName.has('desk_notify')).toBe(true);
      expect(byName.has('desk_reopen_ticket')).toBe(false);
      expect((await oncegate(['contracts', 'check', 'upstream-desk.yaml'])).code).toBe(0);

      const rest = await oncegate(['upstream', 'accept', 'desk', '--add', '--remove']);
      expect(rest.stdout.split('\n')).toEqual([
        'removed  desk_notify from upstream-desk.yaml: the upstream no longer lists notify',
        `left out export: the contract format refuses it (input_schema.properties["date.from"]: argument name 'date.from' must not contain '.': fingerprint paths are dotted)`,
        'added    reopen_ticket as desk_reopen_ticket to upstream-desk.yaml (idempotent_write)',
        '',
      ]);
      expect(entriesOf('upstream-desk.yaml').map((entry) => entry.name)).toEqual(['desk_list_tickets', 'desk_set_ticket_priority', 'desk_close_ticket', 'desk_ticket_history', 'desk_reopen_ticket']);
      expect(readFileSync(fileOf('upstream-desk.yaml'), 'utf8')).toContain('  # reviewed by the desk team on 2026-12-01\n');
      expect(await oncegate(['upstream', 'diff', 'desk'])).toMatchObject({ code: 0 });
      expect((await oncegate(['contracts', 'check', 'upstream-desk.yaml'])).code).toBe(0);
    });

    it('given --tool, then only that tool is accepted; given a tool nobody has, then it is a usage error', async () => {
      expect((await oncegate(['upstream', 'add', 'desk', '--url', upstream.url])).code).toBe(0);
      changeUpstream();
      const one = await oncegate(['upstream', 'accept', 'desk', '--tool', 'desk_set_ticket_priority']);
      expect(one.stdout.split('\n')[0]).toMatch(/^accepted set_ticket_priority: /);
      expect(one.stdout).not.toContain('list_tickets');
      const diff = await oncegate(['upstream', 'diff', 'desk']);
      expect(diff.stdout).toContain('changed  list_tickets');
      expect(diff.stdout).not.toContain('changed  set_ticket_priority');

      const unknown = await oncegate(['upstream', 'accept', 'desk', '--tool', 'archive']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr.split('\n')[0]).toBe("oncegate: upstream accept: --tool names a tool the upstream does not list: 'archive' (it lists list_tickets, set_ticket_priority, close_ticket, ticket.history, export, reopen_ticket)");
    });

    it('given a change accepting would make the file refuse (a redelivery grace on a tool becoming irreversible), then nothing is written and the reason is named', async () => {
      expect((await oncegate(['upstream', 'add', 'desk', '--url', upstream.url])).code).toBe(0);
      const before = readFileSync(fileOf('upstream-desk.yaml'), 'utf8').replace('    correlation_window: 5m\n', '    correlation_window: 5m\n    redelivery_grace: 30s\n');
      writeFileSync(fileOf('upstream-desk.yaml'), before);
      changeUpstream();
      const refused = await oncegate(['upstream', 'accept', 'desk']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^accepting would leave a contract the gateway refuses; nothing was written \(change these by hand, then accept again\):\n {2}upstream-desk\.yaml:\d+:\d+ tools\[1\]\.redelivery_grace: /);
      expect(readFileSync(fileOf('upstream-desk.yaml'), 'utf8')).toBe(before);
    });
  });
});
