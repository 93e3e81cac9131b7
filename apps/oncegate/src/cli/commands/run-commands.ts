import { systemClock } from '@oncegate/execution-journal';
import { endRun, executionsOfRun, grantedTools, listRuns, readRun, RunNotFoundError, type RunView } from '@oncegate/host-decisions';
import { Command } from '@commander-js/extra-typings';
import { action, EXIT_CODES } from '@oncegate/host-cli';
import { actingAs, byLoginOption, configOption, jsonOption, reasonOf, reasonOption, withDataFolder } from '../command-helpers';

function summary(run: RunView): string {
  const grants = grantedTools(run);
  const ended = run.ended ? `ended ${run.ended.endedAt} by ${run.ended.by}` : 'open';
  return `${run.runId}\t${run.actor}\t${run.source}\tstarted ${run.startedAt}\t${ended}\tgrants: ${grants.length > 0 ? grants.join(',') : 'none'}\n`;
}

function listCommand() {
  return new Command('list')
    .summary('List agent runs from the sessions journal: who, since when, session grants, ended or open.')
    .addOption(jsonOption())
    .addOption(configOption())
    .action(
      action((io, options) =>
        withDataFolder(options, io, async (folder) => {
          const runs = await listRuns(folder.store);
          if (options.json === true) io.stdout(`${JSON.stringify(runs, null, 2)}\n`);
          else if (runs.length === 0) io.stdout('no runs are recorded\n');
          else runs.forEach((run) => io.stdout(summary(run)));
          return EXIT_CODES.ok;
        }),
      ),
    );
}

function showCommand() {
  return new Command('show')
    .summary('Show one run: its grants (who granted what and why), how it ended, and the executions it made.')
    .argument('<run-id>', 'the run (from oncegate runs list)')
    .addOption(jsonOption())
    .addOption(configOption())
    .action(
      action((io, runId, options) =>
        withDataFolder(options, io, async (folder) => {
          const run = await readRun(folder.store, runId);
          if (run === undefined) {
            io.stderr(`no run ${runId} is recorded in this data folder\n`);
            return EXIT_CODES.failed;
          }
          const executions = await executionsOfRun(folder.store, runId);
          if (options.json === true) {
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
        }),
      ),
    );
}

function endCommand() {
  return new Command('end')
    .summary('End a run: its session grants stop applying; later calls in it are denied.')
    .argument('<run-id>', 'the run (from oncegate runs list)')
    .addOption(reasonOption())
    .addOption(byLoginOption('operator'))
    .addOption(configOption())
    .action(
      action((io, runId, options) => {
        const reason = reasonOf(options);
        const by = actingAs(options.by, 'operator');
        return withDataFolder(options, io, async (folder) => {
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
      }),
    );
}

/** `oncegate runs …`: agent runs as the sessions journal records them. */
export function runsCommand() {
  return new Command('runs')
    .description('Agent runs from the sessions journal: list, show, end.')
    .addCommand(listCommand())
    .addCommand(showCommand())
    .addCommand(endCommand());
}
