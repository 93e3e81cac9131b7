import { userInfo } from 'node:os';
import type { ReviewResolution } from '@oncegate/domain';
import { loadExecution, systemClock, type LoadedExecution } from '@oncegate/execution-journal';
import { held, isReviewRefusal, resolveReview, reviewViewOf } from '@oncegate/service-host/review/review-queue';
import { EXIT_CODES, UsageError, type CliCommand } from '@oncegate/service-host/cli-command';
import { byOption, executionIdArgument, parseCommandArgs, stringOption, withDataFolder } from '../command-helpers';

const RESOLUTIONS: Record<string, ReviewResolution> = {
  completed: 'completed',
  'not-executed': 'not_executed',
  abandoned: 'abandoned',
};

export const reviewListCommand: CliCommand = {
  group: 'review',
  name: 'list',
  summary: 'List executions held for review (the gateway will not proceed alone).',
  usage: 'Usage: oncegate review list [--config <file>]',
  async run(args, io) {
    const parsed = parseCommandArgs(args);
    if (parsed.positionals.length > 0) throw new UsageError('takes no arguments');
    return withDataFolder(parsed, io, async (folder) => {
      const executions = await held(folder.store);
      if (executions.length === 0) io.stdout('nothing is held for review\n');
      for (const item of executions) {
        io.stdout(`${item.executionId}\t${item.tool}\t${item.actor}\t${item.reason}\tsince ${item.requiredAt}\tattempts ${item.attempts}\n`);
      }
      return EXIT_CODES.ok;
    });
  },
};

export const reviewShowCommand: CliCommand = {
  group: 'review',
  name: 'show',
  summary: 'Show one execution under review: what was asked, what happened, why it is held.',
  usage: 'Usage: oncegate review show <execution-id> [--config <file>]',
  async run(args, io) {
    const parsed = parseCommandArgs(args);
    const id = executionIdArgument(parsed);
    return withDataFolder(parsed, io, async (folder) => {
      const execution = await loadExecution(folder.store, id);
      if (execution.state.accepted === null) {
        io.stderr(`no execution ${id} in this data folder\n`);
        return EXIT_CODES.failed;
      }
      io.stdout(formatReview(execution));
      return EXIT_CODES.ok;
    });
  },
};

/**
 * What `review show` prints for an accepted execution: its status, the review, the evidence recovery gathered for
 * the current attempt (marker probe or status query, with why a probe could not ask the host), the record, then
 * every event with what it says.
 */
export function formatReview(execution: LoadedExecution): string {
  const { events, ...view } = reviewViewOf(execution);
  const lines = [JSON.stringify(view, null, 2)];
  for (const event of events) lines.push(`${event.recordedAt}  #${event.revision} ${event.type}  (${event.actor})  ${event.detail}`);
  return `${lines.join('\n')}\n`;
}

export const reviewResolveCommand: CliCommand = {
  group: 'review',
  name: 'resolve',
  summary: 'Resolve a review as completed, not-executed (sends it again, same execution id) or abandoned.',
  usage: `Usage: oncegate review resolve <execution-id> --as completed|not-executed|abandoned --reason "..." [--by <who>]

Records who resolved it and why. not-executed lets the gateway send it again under the same execution id
and idempotency key; completed records the effect as done; abandoned stops here.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, { as: { type: 'string' }, reason: { type: 'string' }, by: { type: 'string' } });
    const id = executionIdArgument(parsed);
    const as = stringOption(parsed, 'as');
    const resolution = as === undefined ? undefined : RESOLUTIONS[as];
    if (resolution === undefined) throw new UsageError(`--as must be one of: ${Object.keys(RESOLUTIONS).join(', ')}`);
    const reason = stringOption(parsed, 'reason')?.trim();
    if (!reason) throw new UsageError('--reason "..." is required: say why');
    const by = byOption(parsed, `operator:${userInfo().username}`);
    return withDataFolder(parsed, io, async (folder) => {
      try {
        await resolveReview(folder.store, systemClock, id, resolution, by, reason);
      } catch (error) {
        if (!isReviewRefusal(error)) throw error;
        io.stderr(`${error.message}\n`);
        return EXIT_CODES.failed;
      }
      io.stdout(`${id} resolved as ${as} by ${by}\n`);
      return EXIT_CODES.ok;
    });
  },
};
