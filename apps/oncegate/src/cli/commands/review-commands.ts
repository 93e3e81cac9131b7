import type { ReviewResolution } from '@oncegate/domain';
import { loadExecution, systemClock, type LoadedExecution } from '@oncegate/execution-journal';
import { held, isReviewRefusal, resolutionOutcome, resolveReview, reviewViewOf } from '@oncegate/host-decisions';
import { Command, Option } from '@commander-js/extra-typings';
import { action, EXIT_CODES } from '@oncegate/host-cli';
import { jsonOption } from '@oncegate/service-host';
import { actingAs, byLoginOption, configOption, executionId, reasonOf, reasonOption, withDataFolder } from '../command-helpers';

/** What `--as` takes, and the resolution each records. */
const RESOLUTIONS = {
  completed: 'completed',
  'not-executed': 'not_executed',
  abandoned: 'abandoned',
} as const satisfies Record<string, ReviewResolution>;
const RESOLUTION_NAMES = Object.keys(RESOLUTIONS) as (keyof typeof RESOLUTIONS)[];

function listCommand() {
  return new Command('list')
    .summary('List executions held for review (the gateway will not proceed alone).')
    .addOption(jsonOption())
    .addOption(configOption())
    .action(
      action((io, options) =>
        withDataFolder(options, io, async (folder) => {
          const executions = await held(folder.store);
          if (options.json === true) {
            io.stdout(`${JSON.stringify(executions, null, 2)}\n`);
            return EXIT_CODES.ok;
          }
          if (executions.length === 0) io.stdout('nothing is held for review\n');
          for (const item of executions) {
            const waiting = item.resendAskedBy === null ? '' : `\tresolved not executed; resend asked by ${item.resendAskedBy}, waiting for a second operator`;
            io.stdout(`${item.executionId}\t${item.tool}\t${item.actor}\t${item.reason}\tsince ${item.requiredAt}\tattempts ${item.attempts}${waiting}\n`);
          }
          return EXIT_CODES.ok;
        }),
      ),
    );
}

function showCommand() {
  return new Command('show')
    .summary('Show one execution under review: what was asked, what happened, why it is held.')
    .argument('<execution-id>', 'the execution held for review (ex_…)', executionId)
    .addOption(configOption())
    .action(
      action((io, id, options) =>
        withDataFolder(options, io, async (folder) => {
          const execution = await loadExecution(folder.store, id);
          if (execution.state.accepted === null) {
            io.stderr(`no execution ${id} in this data folder\n`);
            return EXIT_CODES.failed;
          }
          io.stdout(formatReview(execution));
          return EXIT_CODES.ok;
        }),
      ),
    );
}

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

function resolveCommand() {
  return new Command('resolve')
    .summary('Resolve a review as completed, not-executed (sent again on the agent\'s retry, or with --resend) or abandoned.')
    .description(
      'Resolves a review and records who resolved it and why. A resolution sends nothing by itself: not-executed waits for the ' +
        "agent's retry, which sends it again under the same execution id and idempotency key; --resend sends it again now " +
        '(an irreversible call only once a second operator gives the same resolution with --resend). completed records the ' +
        'effect as done; abandoned stops here.',
    )
    .argument('<execution-id>', 'the execution held for review (ex_…)', executionId)
    .addOption(new Option('--as <resolution>', 'what the operator found').choices(RESOLUTION_NAMES).makeOptionMandatory())
    .addOption(
      new Option(
        '--resend',
        'with --as not-executed: send it again now rather than on the agent\'s retry (irreversible: asks, and a second operator confirms)',
      ),
    )
    .addOption(reasonOption())
    .addOption(byLoginOption('operator'))
    .addOption(configOption())
    .action(
      action((io, id, options) => {
        const resolution = RESOLUTIONS[options.as];
        const reason = reasonOf(options);
        const by = actingAs(options.by, 'operator');
        const resend = options.resend === true;
        return withDataFolder(options, io, async (folder) => {
          let view;
          try {
            view = await resolveReview(folder.store, systemClock, id, resolution, by, reason, { resend });
          } catch (error) {
            if (!isReviewRefusal(error)) throw error;
            io.stderr(`${error.message}\n`);
            return EXIT_CODES.failed;
          }
          io.stdout(`${id} resolved as ${options.as}${resend ? ' with a resend' : ''} by ${by}: ${resolutionOutcome(view)}\n`);
          return EXIT_CODES.ok;
        });
      }),
    );
}

/** `oncegate review …`: executions whose outcome the gateway could not settle alone. */
export function reviewCommand() {
  return new Command('review')
    .description('Executions held for review, whose outcome the gateway will not settle alone: list, show, resolve.')
    .addCommand(listCommand())
    .addCommand(showCommand())
    .addCommand(resolveCommand());
}
