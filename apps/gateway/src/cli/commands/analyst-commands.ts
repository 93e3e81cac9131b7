import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  formatInvestigation,
  formatRows,
  gatherInvestigationEvents,
  investigate,
  InvalidInvestigationSubjectError,
  JournalFileError,
  journalFileSource,
  loadProjectionModule,
  parseInvestigationSubject,
  ProjectionCheckpointError,
  ProjectionModuleError,
  progressReporter,
  runProjection,
  storeSource,
  UnsupportedRowsFormatError,
  writeRows,
} from '@oncegate/projections';
import { EXIT_CODES, UsageError, type CliCommand, type CliIo, type ExitCode } from '@oncegate/service-host/cli-command';
import { configOrExit, dataFolderOrExit, parseCommandArgs, stringOption, withDataFolder } from '../command-helpers';

/** Errors an analyst can act on: printed as they are (they name the file, line or reason), exit 2. */
function analystError(error: unknown, io: CliIo): ExitCode {
  const known = [ProjectionModuleError, ProjectionCheckpointError, JournalFileError, UnsupportedRowsFormatError, InvalidInvestigationSubjectError];
  if (known.some((type) => error instanceof type)) {
    io.stderr(`${(error as Error).message}\n`);
    return EXIT_CODES.usage;
  }
  throw error;
}

export const investigateCommand: CliCommand = {
  group: 'investigate',
  name: '',
  summary: 'Replay an execution (or every execution of a fingerprint): timeline and the five answers.',
  usage: `Usage: oncegate investigate <execution-id | fingerprint> [--json] [--config <file>]

Replays the execution's stream (and its intent's other executions) and answers: one process or two; was the
first call authorized and dispatched; did the target's outcome come back; did delivery fail after
completion; did the second call attach, carry an idempotency key, or create a new attempt.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, { json: { type: 'boolean' } });
    const [subjectText, ...rest] = parsed.positionals;
    if (subjectText === undefined || rest.length > 0) throw new UsageError('name one execution id (ex_…) or fingerprint (hmac-sha256:…)');
    return withDataFolder(parsed, io, async (folder) => {
      try {
        const subject = parseInvestigationSubject(subjectText);
        const found = investigate(await gatherInvestigationEvents(folder.store, subject), subject);
        const text = parsed.values['json'] === true ? JSON.stringify(found, null, 2) : formatInvestigation(found);
        io.stdout(text.endsWith('\n') ? text : `${text}\n`);
        if (!found.found) io.stderr(`nothing is recorded for ${subjectText}\n`);
        return found.found ? EXIT_CODES.ok : EXIT_CODES.failed;
      } catch (error) {
        return analystError(error, io);
      }
    });
  },
};

export const projectionRunCommand: CliCommand = {
  group: 'projection',
  name: 'run',
  summary: 'Run a projection (built-in or your module) over the journal; write JSON or CSV.',
  usage: `Usage: oncegate projection run <name | module.ts> [--from <position>] [--out result.json|result.csv]
                              [--journal export.ndjson] [--rebuild] [--checkpoint <file>] [--config <file>]

Built-ins: fingerprint-index, runs-by-actor, open-executions, possible-duplicate-intents (they rebuild from
zero). A module (.mjs, .mts, or .js/.ts in an ESM package) exports \`projection\` = { name, description, initialState,
evolve, rows, filter? }; its run
checkpoints to <data>/projections/<name>.checkpoint.json (or --checkpoint) and resumes from it.
Reads the data folder's store, or an exported journal with --journal. Progress goes to stderr.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, {
      from: { type: 'string' },
      out: { type: 'string' },
      journal: { type: 'string' },
      rebuild: { type: 'boolean' },
      checkpoint: { type: 'string' },
    });
    const [specifier, ...rest] = parsed.positionals;
    if (specifier === undefined || rest.length > 0) throw new UsageError('name one projection (a built-in name or a module file)');
    const fromText = stringOption(parsed, 'from');
    const from = fromText === undefined ? undefined : Number(fromText);
    if (from !== undefined && (!Number.isSafeInteger(from) || from < 0)) throw new UsageError('--from must be a global position');
    const journal = stringOption(parsed, 'journal');
    const config = journal === undefined ? configOrExit(parsed, io) : undefined;
    if (typeof config === 'number') return config;
    const folder = config === undefined ? undefined : await dataFolderOrExit(config, io);
    if (typeof folder === 'number') return folder;
    try {
      const { projection, builtin } = await loadProjectionModule(specifier, { cwd: process.cwd() });
      let checkpointFile = stringOption(parsed, 'checkpoint');
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
        rebuild: builtin || parsed.values['rebuild'] === true,
        onProgress: bar.update,
      });
      bar.finish();
      const out = stringOption(parsed, 'out');
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
  },
};
