import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  formatInvestigation,
  formatRows,
  gatherInvestigationEvents,
  investigate,
  InvalidInvestigationSubjectError,
  JournalFileError,
  journalFileSource,
  journalFileStreams,
  JournalVerificationError,
  loadProjectionModule,
  parseInvestigationSubject,
  parseSqlTarget,
  projectInto,
  ProjectionCheckpointError,
  ProjectionClaimedError,
  ProjectionClaimLostError,
  ProjectionColumnTypeError,
  ProjectionKeyError,
  ProjectionModuleError,
  ProjectionParamError,
  ProjectionStateError,
  ProjectionTableConflictError,
  ProjectionTargetError,
  progressReporter,
  runProjection,
  storeSource,
  UnsupportedRowsFormatError,
  verifyExport,
  writeRows,
  type AnyProjection,
  type JournalTrust,
  type ProjectionSource,
} from '@oncegate/projections';
import type { EventStore } from '@oncegate/event-store';
import { loadSealPublicKey, SealKeyError } from '@oncegate/vault';
import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import { action, EXIT_CODES, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { configOption, configOrExit, dataFolderOrExit, jsonOption, wholeNumber, withDataFolder } from '../command-helpers';

/** Errors an analyst can act on: printed as they are (they name the file, line or reason), exit 2. */
function analystError(error: unknown, io: CliIo): ExitCode {
  const known = [
    ProjectionModuleError,
    ProjectionCheckpointError,
    ProjectionParamError,
    ProjectionStateError,
    JournalFileError,
    JournalVerificationError,
    SealKeyError,
    UnsupportedRowsFormatError,
    InvalidInvestigationSubjectError,
    ProjectionTargetError,
    ProjectionColumnTypeError,
    ProjectionKeyError,
  ];
  if (known.some((type) => error instanceof type)) {
    io.stderr(`${(error as Error).message}\n`);
    return EXIT_CODES.usage;
  }
  // Another run writes the table, or took it over: nothing is wrong with the command line.
  if (error instanceof ProjectionClaimedError || error instanceof ProjectionClaimLostError || error instanceof ProjectionTableConflictError) {
    io.stderr(`${error.message}\n`);
    return EXIT_CODES.failed;
  }
  throw error;
}

/** `--public-key`: the export given with `--journal` is verified with it before it is read. */
const publicKeyOption = () =>
  new Option('--public-key <file>', "with --journal: the journal's public key (journal-seal.pub.pem of the data folder's keys); the export is verified with it first");

/** `--unverified`: the export is read without that check, and the run says so. */
const unverifiedOption = () => new Option('--unverified', 'with --journal: read the export without verifying it (said loudly: nothing read is evidence)');

/** How the export is trusted, from the options; the key file is read here (its error names the file). */
function trustOf(options: { publicKey?: string; unverified?: boolean }): JournalTrust | undefined {
  if (options.unverified === true) return { unverified: true };
  return options.publicKey === undefined ? undefined : { publicKey: loadSealPublicKey(options.publicKey) };
}

/** `--param key=value`, repeatable. */
function collectParam(text: string, previous: Record<string, string> = {}): Record<string, string> {
  const at = text.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError(`'${text}' is not key=value`);
  return { ...previous, [text.slice(0, at)]: text.slice(at + 1) };
}

export function investigateCommand() {
  return new Command('investigate')
    .summary('Replay an execution (or every execution of a fingerprint): timeline and the six answers.')
    .description(
      "Replays the execution's stream (and its intent's other executions) and answers: one process or two; was the first call " +
        "authorized and dispatched; did the target's outcome come back; did delivery fail after completion; did the second call " +
        'attach, carry an idempotency key, or create a new attempt; was the agent told, and what (per call: the state it was ' +
        'told and whether delivery is proven). Exit 1 when nothing is recorded for it.',
    )
    .argument('<execution-id|fingerprint>', 'an execution id (ex_…) or an intent fingerprint (hmac-sha256:…)')
    .addOption(jsonOption())
    .option('--journal <file>', 'read an exported journal (oncegate journal export) instead of the store; verified first')
    .addOption(publicKeyOption())
    .addOption(unverifiedOption())
    .addOption(configOption())
    .action(
      action(async (io, subjectText, options) => {
        const answer = async (store: Parameters<typeof gatherInvestigationEvents>[0]): Promise<ExitCode> => {
          const subject = parseInvestigationSubject(subjectText);
          const found = investigate(await gatherInvestigationEvents(store, subject), subject);
          const text = options.json === true ? JSON.stringify(found, null, 2) : formatInvestigation(found);
          io.stdout(text.endsWith('\n') ? text : `${text}\n`);
          if (!found.found) io.stderr(`nothing is recorded for ${subjectText}\n`);
          return found.found ? EXIT_CODES.ok : EXIT_CODES.failed;
        };
        try {
          if (options.journal !== undefined) {
            parseInvestigationSubject(subjectText);
            await verifyExport(options.journal, trustOf(options), io.stderr);
            return await answer(await journalFileStreams(options.journal, ['execution-', 'intent-']));
          }
        } catch (error) {
          return analystError(error, io);
        }
        return withDataFolder(options, io, async (folder) => {
          try {
            return await answer(folder.store);
          } catch (error) {
            return analystError(error, io);
          }
        });
      }),
    );
}

export function projectionCommand() {
  const runCommand = new Command('run')
    .summary('Run a projection (built-in or your module) over the journal; write JSON, CSV or a SQL table, once or live.')
    .description(
      "Runs a projection over the journal: the data folder's store, or an exported journal with --journal. Progress goes to stderr.\n\n" +
        'Built-ins: fingerprint-index, runs-by-actor, open-executions, possible-duplicate-intents (they rebuild from zero, except into a ' +
        'table). A module (.mjs, .mts, or .js/.ts in an ESM package) exports `projection` = { name, description, initialState, evolve, ' +
        'rows, filter?, params?, key? }; its run checkpoints to <data>/projections/<name>.checkpoint.json (or --checkpoint) and resumes from it.\n\n' +
        'With --into, the rows go into a table of a SQLite file or a PostgreSQL database (named after the projection, or --table), ' +
        'written after each batch of events together with the checkpoint (table oncegate_projection_checkpoints there), from which ' +
        'the next run resumes. With --follow as well, the run keeps the table current as events are recorded, until Ctrl-C or ' +
        'SIGTERM: then it checkpoints, says where it stopped, and exits 0. One run writes a table at a time: it claims ' +
        'projection:<table> in the store; a second is refused naming the holder, or waits with --wait.',
    )
    .argument('<name|module>', 'a built-in projection, or a module file')
    .addOption(new Option('--from <position>', 'start after this global position').argParser(wholeNumber(0)))
    .option('--out <file>', 'write the rows to a .json or .csv file (default: JSON to stdout)')
    .option('--journal <file>', 'read an exported journal (oncegate journal export) instead of the store')
    .option('--rebuild', "start from zero, not from the module's checkpoint (with --into: drop the table and write it anew)")
    .option('--checkpoint <file>', "the module's checkpoint file (default with the store: <data>/projections/<name>.checkpoint.json; with --journal only this keeps one)")
    .option('--param <key=value>', "a parameter of the projection (its module's `params`); repeat for each", collectParam)
    .addOption(new Option('--into <target>', 'write the rows into a SQL table: sqlite:<file> (or a file ending .db or .sqlite) or postgres://user@host:5432/database').conflicts(['out', 'checkpoint']))
    .option('--table <name>', "with --into: the table's name (default: the projection's name with _ for -)")
    .option('--follow', 'with --into: after reaching the head, keep the table current until Ctrl-C or SIGTERM')
    .option('--wait', 'with --into: when another run writes the table, wait for it to stop instead of failing')
    .addOption(publicKeyOption())
    .addOption(unverifiedOption())
    .addOption(configOption())
    .action(
      action(async (io, specifier, options) => {
        const { from, journal, out } = options;
        const intoOnly = (['table', 'follow', 'wait'] as const).filter((name) => options[name] !== undefined && options.into === undefined);
        if (intoOnly.length > 0) {
          io.stderr(`${intoOnly.map((name) => `--${name}`).join(', ')} ${intoOnly.length === 1 ? 'needs' : 'need'} --into <target>: a run is kept current, and claimed, as a SQL table\n`);
          return EXIT_CODES.usage;
        }
        if (options.follow === true && journal !== undefined) {
          io.stderr('--follow reads the store as it grows; an exported journal (--journal) does not grow\n');
          return EXIT_CODES.usage;
        }
        const config = journal === undefined ? configOrExit(options, io) : undefined;
        if (typeof config === 'number') return config;
        const folder = config === undefined ? undefined : await dataFolderOrExit(config, io);
        if (typeof folder === 'number') return folder;
        try {
          const { projection, builtin } = await loadProjectionModule(specifier, { cwd: process.cwd() });
          if (journal !== undefined) await verifyExport(journal, trustOf(options), io.stderr);
          if (options.into !== undefined) {
            const spec = parseSqlTarget(options.into);
            // The store's own file has one writer, the store's: analysts' tables go in a file of their own.
            if (spec.kind === 'sqlite' && config !== undefined && sameFile(spec.file, join(config.dataDir, 'events.db'))) {
              io.stderr(`--into ${options.into}: that is the event store's file; write the table into a file of its own (e.g. analysis.db)\n`);
              return EXIT_CODES.usage;
            }
            return await runInto(io, projection, options.into, {
              ...options,
              ...(journal !== undefined ? { source: journalFileSource(journal) } : { store: folder!.store }),
            });
          }
          let checkpointFile = options.checkpoint;
          if (checkpointFile === undefined && !builtin && config !== undefined) {
            mkdirSync(join(config.dataDir, 'projections'), { recursive: true });
            checkpointFile = join(config.dataDir, 'projections', `${projection.name}.checkpoint.json`);
          }
          const bar = progressReporter(process.stderr);
          const result = await runProjection({
            projection,
            source: journal !== undefined ? journalFileSource(journal) : storeSource(folder!.store),
            ...(from !== undefined ? { from } : {}),
            ...(checkpointFile !== undefined ? { checkpointFile } : {}),
            rebuild: builtin || options.rebuild === true,
            ...(options.param === undefined ? {} : { params: options.param }),
            onProgress: bar.update,
          });
          bar.finish();
          if (out !== undefined) {
            await writeRows(result.rows, out);
            io.stderr(`${projection.name}: ${result.events} events to position ${result.position}; ${result.rows.length} rows written to ${out}\n`);
          } else {
            io.stdout(formatRows(result.rows, 'json'));
          }
          return EXIT_CODES.ok;
        } catch (error) {
          return analystError(error, io);
        } finally {
          await folder?.close();
        }
      }),
    );
  return new Command('projection').description('Analyst projections over the journal.').addCommand(runCommand);
}

function sameFile(a: string, b: string): boolean {
  const real = (path: string) => (existsSync(path) ? realpathSync(path) : resolve(path));
  return real(a) === real(b);
}

interface IntoOptions {
  readonly table?: string;
  readonly follow?: boolean;
  readonly wait?: boolean;
  readonly rebuild?: boolean;
  readonly from?: number;
  readonly param?: Record<string, string>;
  readonly store?: EventStore;
  readonly source?: ProjectionSource;
}

/**
 * `--into`: the run writes the table batch by batch (projectInto). Following, it stops on SIGINT or SIGTERM (the first
 * one; the handlers are gone once the run has stopped), checkpoints and says where it stopped.
 */
async function runInto(io: CliIo, projection: AnyProjection, into: string, options: IntoOptions): Promise<ExitCode> {
  const stopper = new AbortController();
  const stop = () => stopper.abort();
  const follow = options.follow === true;
  if (follow) {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  }
  const bar = progressReporter(process.stderr);
  // Once: at the head when following, else at the end.
  let barDone = false;
  const finishBar = () => {
    if (!barDone) bar.finish();
    barDone = true;
  };
  let live = false;
  try {
    const result = await projectInto({
      projection,
      into,
      follow,
      signal: stopper.signal,
      ...(options.store === undefined ? {} : { store: options.store }),
      ...(options.source === undefined ? {} : { source: options.source }),
      ...(options.table === undefined ? {} : { table: options.table }),
      ...(options.param === undefined ? {} : { params: options.param }),
      ...(options.from === undefined ? {} : { from: options.from }),
      rebuild: options.rebuild === true,
      wait: options.wait === true,
      onProgress: bar.update,
      onWaiting: (claim) => io.stderr(`waiting: ${claim.name} is held by ${claim.owner} until ${claim.expiresAt}\n`),
      onCaughtUp: (position) => {
        finishBar();
        live = true;
        io.stderr(`${projection.name}: caught up at position ${position}; following (Ctrl-C or SIGTERM to stop)\n`);
      },
      onBatch: (batch) => {
        if (live) io.stderr(`${projection.name}: position ${batch.position}: ${batch.rows} rows (${batch.upserted} written, ${batch.deleted} deleted)\n`);
      },
    });
    finishBar();
    const where = `table ${result.table} in ${result.target}`;
    const resumed = result.resumedFrom === undefined ? '' : ` (resumed after ${result.resumedFrom})`;
    io.stderr(
      result.stopped === 'signal'
        ? `${projection.name}: stopped at position ${result.position}${resumed}; checkpointed; ${where} holds ${result.rows} rows\n`
        : `${projection.name}: ${result.events} events to position ${result.position}${resumed}; ${where} holds ${result.rows} rows\n`,
    );
    return EXIT_CODES.ok;
  } finally {
    finishBar();
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
  }
}
