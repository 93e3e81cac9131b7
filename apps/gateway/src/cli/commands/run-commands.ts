import { userInfo } from 'node:os';
import { systemClock } from '@oncegate/execution-journal';
import { endRun, executionsOfRun, grantedTools, listRuns, readRun, RunNotFoundError, type RunView } from '@oncegate/service-host/runs/run-journal';
import { EXIT_CODES, UsageError, type CliCommand } from '@oncegate/service-host/cli-command';
import { byOption, parseCommandArgs, stringOption, withDataFolder, type ParsedArguments } from '../command-helpers';

function runIdArgument(parsed: ParsedArguments): string {
  const [runId, ...rest] = parsed.positionals;
  if (runId === undefined || rest.length > 0) throw new UsageError('name exactly one run id');
  return runId;
}

function summary(run: RunView): string {
  const grants = grantedTools(run);
  const ended = run.ended ? `ended ${run.ended.endedAt} by ${run.ended.by}` : 'open';
  return `${run.runId}\t${run.actor}\t${run.source}\tstarted ${run.startedAt}\t${ended}\tgrants: ${grants.length > 0 ? grants.join(',') : 'none'}\n`;
}

export const runsListCommand: CliCommand = {
  group: 'runs',
  name: 'list',
  summary: 'List agent runs from the sessions journal: who, since when, session grants, ended or open.',
  usage: 'Usage: oncegate runs list [--json] [--config <file>]',
  async run(args, io) {
    const parsed = parseCommandArgs(args, { json: { type: 'boolean' } });
    if (parsed.positionals.length > 0) throw new UsageError('takes no arguments');
    return withDataFolder(parsed, io, async (folder) => {
      const runs = await listRuns(folder.store);
      if (parsed.values['json'] === true) io.stdout(`${JSON.stringify(runs, null, 2)}\n`);
      else if (runs.length === 0) io.stdout('no runs are recorded\n');
      else runs.forEach((run) => io.stdout(summary(run)));
      return EXIT_CODES.ok;
    });
  },
};

export const runsShowCommand: CliCommand = {
  group: 'runs',
  name: 'show',
  summary: 'Show one run: its grants (who granted what and why), how it ended, and the executions it made.',
  usage: 'Usage: oncegate runs show <run-id> [--json] [--config <file>]',
  async run(args, io) {
    const parsed = parseCommandArgs(args, { json: { type: 'boolean' } });
    const runId = runIdArgument(parsed);
    return withDataFolder(parsed, io, async (folder) => {
      const run = await readRun(folder.store, runId);
      if (run === undefined) {
        io.stderr(`no run ${runId} is recorded in this data folder\n`);
        return EXIT_CODES.failed;
      }
      const executions = await executionsOfRun(folder.store, runId);
      if (parsed.values['json'] === true) {
        io.stdout(`${JSON.stringify({ ...run, executions }, null, 2)}\n`);
        return EXIT_CODES.ok;
      }
      io.stdout(summary(run));
      for (const grant of run.grants) {
        io.stdout(`  granted ${grant.tools.join(',')} at ${grant.grantedAt} by ${grant.by}: ${grant.reason} (request ${grant.executionId})\n`);
      }
      if (run.ended) io.stdout(`  ended at ${run.ended.endedAt} by ${run.ended.by}: ${run.ended.reason}\n`);
      for (const execution of executions) {
        io.stdout(`  ${execution.executionId}\t${execution.tool}\t${execution.acceptedAt}\t${execution.status}\n`);
      }
      return EXIT_CODES.ok;
    });
  },
};

export const runsEndCommand: CliCommand = {
  group: 'runs',
  name: 'end',
  summary: 'End a run: its session grants stop applying; later calls in it are denied.',
  usage: 'Usage: oncegate runs end <run-id> --reason "..." [--by <who>] [--config <file>]',
  async run(args, io) {
    const parsed = parseCommandArgs(args, { reason: { type: 'string' }, by: { type: 'string' } });
    const runId = runIdArgument(parsed);
    const reason = stringOption(parsed, 'reason')?.trim();
    if (!reason) throw new UsageError('--reason "..." is required: say why');
    const by = byOption(parsed, `operator:${userInfo().username}`);
    return withDataFolder(parsed, io, async (folder) => {
      try {
        const ended = await endRun(folder.store, runId, by, reason, systemClock);
        io.stdout(ended ? `run ${runId} ended by ${by}\n` : `run ${runId} had already ended\n`);
        return EXIT_CODES.ok;
      } catch (error) {
        if (!(error instanceof RunNotFoundError)) throw error;
        io.stderr(`${error.message} in this data folder\n`);
        return EXIT_CODES.failed;
      }
    });
  },
};
