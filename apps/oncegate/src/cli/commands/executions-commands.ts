import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  ExecutionsIndex,
  InvalidExecutionsQueryError,
  MAX_PAGE_LIMIT,
  openIndexTables,
  parseExecutionsQuery,
  SQLITE_INDEX_FILE,
  type ExecutionRow,
  type ExecutionsPage,
  type IndexLocation,
} from '@oncegate/executions-index';
import { redactedStoreUrl, type GatewayConfig } from '@oncegate/host-config';
import { formatRows } from '@oncegate/projections';
import { Command, Option } from '@commander-js/extra-typings';
import { action, EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { configOption, jsonOption, withDataFolder } from '../command-helpers';

/** Where the configured store keeps its executions index. */
export function indexLocationOf(config: GatewayConfig): IndexLocation {
  return config.store.driver === 'sqlite'
    ? { driver: 'sqlite', dataDir: config.dataDir }
    : { driver: 'postgres', url: config.store.url, location: redactedStoreUrl(config.store.url) };
}

/** A repeatable option's values, in the order given. */
const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** `2026-07-22 12:00:01 +02:00`: this machine's local time with its offset, so a reader never guesses the zone. */
export function localTime(instant: string | null): string {
  if (instant === null) return '-';
  const date = new Date(instant);
  if (Number.isNaN(date.getTime())) return instant;
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  const offset = -date.getTimezoneOffset();
  const zone = `${offset >= 0 ? '+' : '-'}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())} ${zone}`;
}

const TABLE_COLUMNS: readonly { readonly title: string; readonly cell: (row: ExecutionRow) => string }[] = [
  { title: 'ACCEPTED', cell: (row) => localTime(row.acceptedAt) },
  { title: 'EXECUTION', cell: (row) => row.executionId },
  { title: 'TOOL', cell: (row) => row.tool },
  { title: 'ACTOR', cell: (row) => row.actor },
  { title: 'CLASS', cell: (row) => row.operationClass },
  { title: 'STATE', cell: (row) => row.state },
  { title: 'ATTEMPTS', cell: (row) => String(row.attempts) },
  { title: 'HOST', cell: (row) => row.targetHost },
  { title: 'RUN', cell: (row) => row.runId ?? '-' },
  { title: 'LAST CHANGE', cell: (row) => localTime(row.lastChangeAt) },
];

/** The readable table: one line per execution, columns padded to their widest cell. */
export function formatExecutionsTable(rows: readonly ExecutionRow[]): string {
  const cells = [TABLE_COLUMNS.map((column) => column.title), ...rows.map((row) => TABLE_COLUMNS.map((column) => column.cell(row)))];
  const widths = TABLE_COLUMNS.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  return cells.map((line) => line.map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

/** What stderr says when the answer may miss the latest calls. */
function lagNote(page: ExecutionsPage, foldedHere: boolean): string | undefined {
  const { behind, position, head } = page.index;
  if (behind === 0) return undefined;
  const who = foldedHere ? '' : ' (a running gateway holds the index and is folding them; ask again in a moment)';
  return `the executions index is ${behind} event(s) behind the journal (folded to position ${position} of ${head}): the latest calls may be missing${who}`;
}

function listCommand() {
  return new Command('list')
    .summary('Search executions: by tool, agent, class, state, run, channel, host and time; newest first, a page at a time.')
    .description(
      'Answers from the executions index, which the running gateway keeps current from the journal. Each filter may be ' +
        'repeated or given a comma list, and the filters all apply: "irreversible calls of agent:payments in the last hour whose ' +
        'outcome is unknown" is --actor agent:payments --class irreversible --state outcome_unknown,needs_review --since 1h. ' +
        'When no process holds the index (the gateway is stopped) the command folds what the index has not seen first; ' +
        'while a gateway runs, the gateway does, and the command says when the index is behind. The next page: --cursor <the printed cursor>.',
    )
    .addOption(new Option('--tool <name>', 'the tool (repeatable)').argParser(collect))
    .addOption(new Option('--actor <principal>', 'the agent that called, e.g. agent:deploy-bot (repeatable)').argParser(collect))
    .addOption(new Option('--class <class>', 'operation class: read_only, idempotent_write, conditional_write, irreversible, remote_command (repeatable)').argParser(collect))
    .addOption(new Option('--state <state>', "the execution's state, e.g. outcome_unknown, needs_review, delivered (repeatable)").argParser(collect))
    .addOption(new Option('--run <run-id>', 'the agent run (repeatable)').argParser(collect))
    .addOption(new Option('--channel <channel>', 'http, ssh, mcp or a plugin channel (repeatable)').argParser(collect))
    .addOption(new Option('--host <host>', "the target's host[:port] (repeatable)").argParser(collect))
    .addOption(new Option('--since <time>', 'accepted at or after: ISO-8601 (2026-07-22T10:00:00Z) or a time ago (30m, 1h, 2d)'))
    .addOption(new Option('--until <time>', 'accepted before: ISO-8601 or a time ago'))
    .addOption(new Option('--limit <n>', `executions per page, 1 to ${MAX_PAGE_LIMIT}`).default('50'))
    .addOption(new Option('--cursor <cursor>', 'the next page: the cursor the previous page printed'))
    .addOption(jsonOption())
    .addOption(new Option('--csv', 'CSV rows with every column').conflicts('json'))
    .addOption(new Option('--no-catch-up', 'answer from the index as it is, without folding what it has not seen'))
    .addOption(configOption())
    .action(
      action((io, options) => {
        let query;
        try {
          query = parseExecutionsQuery(
            {
              tool: options.tool,
              actor: options.actor,
              class: options.class,
              state: options.state,
              run: options.run,
              channel: options.channel,
              host: options.host,
              since: options.since,
              until: options.until,
              limit: options.limit,
              cursor: options.cursor,
            },
            Date.now(),
          );
        } catch (error) {
          if (error instanceof InvalidExecutionsQueryError) throw new UsageError(error.message.replace(/^(\w+) /, '--$1 '));
          throw error;
        }
        return withDataFolder(options, io, (folder, config) =>
          withIndex(io, folder.store, config, async (index) => {
            let foldedHere = false;
            if (options.catchUp !== false && (await index.lag()).behind > 0) foldedHere = (await index.catchUp()).claimed;
            const page = await index.page(query);
            writePage(io, page, options.json === true ? 'json' : options.csv === true ? 'csv' : 'table');
            const note = lagNote(page, foldedHere || options.catchUp === false);
            if (note !== undefined) io.stderr(`${note}\n`);
            return EXIT_CODES.ok;
          }),
        );
      }),
    );
}

function writePage(io: CliIo, page: ExecutionsPage, format: 'json' | 'csv' | 'table'): void {
  switch (format) {
    case 'json':
      io.stdout(`${JSON.stringify(page, null, 2)}\n`);
      return;
    case 'csv':
      io.stdout(formatRows(page.executions.map((row) => ({ ...row })), 'csv'));
      if (page.nextCursor !== null) io.stderr(`next page: --cursor ${page.nextCursor}\n`);
      return;
    case 'table':
      io.stdout(page.executions.length === 0 ? 'no executions match\n' : formatExecutionsTable(page.executions));
      if (page.nextCursor !== null) io.stdout(`next page: --cursor ${page.nextCursor}\n`);
      return;
    default: {
      const unknown: never = format;
      return unknown;
    }
  }
}

/** Opens the configuration's executions index on the data folder's store, runs `work`, and closes it. */
async function withIndex(
  io: CliIo,
  store: ConstructorParameters<typeof ExecutionsIndex>[0]['store'],
  config: GatewayConfig,
  work: (index: ExecutionsIndex) => Promise<ExitCode>,
): Promise<ExitCode> {
  let tables;
  try {
    tables = await openIndexTables(indexLocationOf(config));
  } catch (error) {
    // The index holds nothing the journal does not: a damaged file is deleted and folded again.
    const remedy = config.store.driver === 'sqlite' ? `; delete ${join(config.dataDir, SQLITE_INDEX_FILE)} and run the command again: it is folded again from the journal` : '';
    io.stderr(`the executions index could not be opened: ${error instanceof Error ? error.message : String(error)}${remedy}\n`);
    return EXIT_CODES.failed;
  }
  const index = new ExecutionsIndex({ store, tables, owner: `cli@${hostname()}/${process.pid}` });
  try {
    return await work(index);
  } finally {
    await index.stop();
    await tables.close();
  }
}

function rebuildCommand() {
  return new Command('rebuild')
    .summary('Drop the executions index and fold the whole journal into it again.')
    .description(
      'The index holds nothing the journal does not: this empties it and folds every execution again. Stop the gateway first ' +
        '(it holds the index while it runs; the command then says so and changes nothing).',
    )
    .addOption(configOption())
    .action(
      action((io, options) =>
        withDataFolder(options, io, (folder, config) =>
          withIndex(io, folder.store, config, async (index) => {
            const started = Date.now();
            const rebuilt = await index.rebuild();
            if (!rebuilt.claimed) {
              io.stderr('a running gateway holds the executions index: stop it first, or let it keep the index current\n');
              return EXIT_CODES.failed;
            }
            io.stdout(`rebuilt the executions index from ${rebuilt.events} event(s) in ${((Date.now() - started) / 1000).toFixed(1)} s (${index.location})\n`);
            return EXIT_CODES.ok;
          }),
        ),
      ),
    );
}

/** `oncegate executions …`: the analyst's search over every execution. */
export function executionsCommand() {
  return new Command('executions')
    .description('Search every execution by tool, agent, class, state, run, channel, host and time (the executions index): list, rebuild.')
    .addCommand(listCommand())
    .addCommand(rebuildCommand());
}
