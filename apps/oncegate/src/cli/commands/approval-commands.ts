import type { ToolContract } from '@oncegate/contracts';
import { systemClock } from '@oncegate/execution-journal';
import type { GatewayConfig } from '@oncegate/host-config';
import { decide, isApprovalRefusal, pending, show, type ApprovalDecision, type ApprovalView } from '@oncegate/host-decisions';
import { action, EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { loadTools } from '@oncegate/service-host';
import { Command, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { actingAs, byOption, configOption, executionId, jsonOption, reasonOf, reasonOption, withDataFolder } from '../command-helpers';
import { approverKeyCommand, signDecisionCommand } from './approver-key-commands';
import { tokenCommands } from './token-commands';

/** Who decides when `--by` is not given. */
const DEFAULT_DECIDER = 'operator:cli';

/** A refusal of the queue is the answer, not a crash: printed, exit 1. Bad input is a usage error (exit 2). */
async function answering(io: CliIo, work: () => Promise<ExitCode>): Promise<ExitCode> {
  try {
    return await work();
  } catch (error) {
    if (!isApprovalRefusal(error)) throw error;
    switch (error.kind) {
      case 'invalid_decision':
        throw new UsageError(error.message);
      case 'not_found':
      case 'not_pending':
        io.stderr(`${error.message}\n`);
        return EXIT_CODES.failed;
      default: {
        const unhandled: never = error;
        throw unhandled;
      }
    }
  }
}

/** The contracts, for the target's request details; an unreadable contract file still lets an approver decide. */
function toolsOrNone(config: GatewayConfig, io: CliIo): ReadonlyMap<string, ToolContract> | undefined {
  try {
    return loadTools(config);
  } catch (error) {
    io.stderr(`cannot read the contracts (${(error as Error).message.split('\n')[0]}); showing the recorded target only\n`);
    return undefined;
  }
}

function formatView(view: ApprovalView): string {
  const { target, approval } = view;
  const where = target.url ?? target.sshHost ?? '(no request details: the tool is not in the contract file)';
  const lines = [
    `execution   ${view.executionId}   (${view.state})`,
    `approval    ${view.summary}`,
    `actor       ${view.actor}${view.runId ? `   run ${view.runId}` : ''}`,
    `tool        ${view.tool}   (${view.operationClass}, ${view.channel})`,
    `target      ${target.name}   ${target.method ? `${target.method} ` : ''}${where}`,
    ...(target.argv ? [`command     ${target.argv.join(' ')}`] : []),
    `arguments   ${JSON.stringify(view.arguments)}   (secret arguments are HMACs)`,
    `fingerprint ${view.fingerprint}   scope ${view.intentScope}`,
    `requested   by ${approval.requestedBy} at ${approval.requestedAt}: ${approval.reason}`,
    `expires     ${approval.expiresAt ?? 'never'}`,
    `granting    ${approval.grants}`,
    ...(approval.decidedBy ? [`decided     ${approval.decision} by ${approval.decidedBy} at ${approval.decidedAt}: ${approval.decisionReason}`] : []),
    `calls       ${1 + view.attachedCalls.length} (the first, and ${view.attachedCalls.length} attached retr${view.attachedCalls.length === 1 ? 'y' : 'ies'}; a retry never asks again)`,
    ...view.attachedCalls.map((call) => `  retry at ${call.attachedAt}  ${JSON.stringify(call.correlation)}  given ${call.returned}`),
  ];
  return `${lines.join('\n')}\n`;
}

function listCommand(): CommandUnknownOpts {
  return new Command('list')
    .summary('List executions awaiting an approval decision, oldest first.')
    .description('List executions awaiting an approval decision, oldest first: tool, actor, scope, who asked and when, when it expires, retries attached, and why.')
    .addOption(jsonOption())
    .addOption(configOption())
    .action(
      action((io, options) =>
        withDataFolder(options, io, async (folder) => {
          const approvals = await pending(folder.store);
          if (options.json === true) {
            io.stdout(`${JSON.stringify(approvals, null, 2)}\n`);
            return EXIT_CODES.ok;
          }
          if (approvals.length === 0) io.stdout('nothing is awaiting approval\n');
          for (const a of approvals) {
            io.stdout(
              `${a.executionId}\t${a.tool}\t${a.actor}\t${a.scope === 'run' ? `run ${a.runId}` : 'execution'}\trequested ${a.requestedAt} by ${a.requestedBy}\texpires ${a.expiresAt ?? 'never'}\tretries ${a.retriesAttached}\t${a.reason}\n`,
            );
          }
          return EXIT_CODES.ok;
        }),
      ),
    );
}

function showCommand(): CommandUnknownOpts {
  return new Command('show')
    .summary('Show one approval request: who asks, what would be sent where, and what granting does.')
    .description(
      'Show one approval request: who asks, what would be sent where, and what granting does. Reads the contract file for the ' +
        "target's request details; if it cannot, it says so and shows the recorded target. Exit 1 when the execution is unknown.",
    )
    .argument('<execution-id>', 'the execution awaiting approval (ex_…)', executionId)
    .addOption(jsonOption())
    .addOption(configOption())
    .action(
      action((io, id, options) =>
        withDataFolder(options, io, (folder, config) =>
          answering(io, async () => {
            const view = await show(folder.store, id, { tools: toolsOrNone(config, io) ?? new Map() });
            io.stdout(options.json === true ? `${JSON.stringify(view, null, 2)}\n` : formatView(view));
            return EXIT_CODES.ok;
          }),
        ),
      ),
    );
}

function decisionCommand(decision: ApprovalDecision): CommandUnknownOpts {
  const summary =
    decision === 'approve'
      ? 'Grant a pending approval (recorded with who and why); authorization then lets it proceed.'
      : 'Deny a pending approval (recorded with who and why); nothing is sent.';
  return new Command(decision)
    .summary(summary)
    .description(
      `${summary}\n\nRecords ${decision === 'approve' ? 'ApprovalGranted' : 'ApprovalDenied'} on the execution, by --by. Refused (exit 1, nothing ` +
        'recorded) when the execution is unknown or not awaiting a decision: already decided, timed out, or denied for another reason.',
    )
    .argument('<execution-id>', 'the execution awaiting approval (ex_…)', executionId)
    .addOption(reasonOption())
    .addOption(byOption(DEFAULT_DECIDER))
    .addOption(configOption())
    .action(
      action((io, id, options) => {
        const reason = reasonOf(options);
        const by = actingAs(options.by);
        return withDataFolder(options, io, (folder) =>
          answering(io, async () => {
            const view = await decide(folder.store, systemClock, id, decision, by, reason);
            io.stdout(`${id} ${view.approval.decision} by ${by}\n`);
            return EXIT_CODES.ok;
          }),
        );
      }),
    );
}

/** `oncegate approvals …`: the approval queue, as an approver works it from a terminal. */
export function approvalsCommand(): Command {
  return new Command('approvals')
    .description('The approval queue: executions that wait for a person to decide (list, show), and the decisions (approve, deny).')
    .addCommand(listCommand())
    .addCommand(showCommand())
    .addCommand(decisionCommand('approve'))
    .addCommand(decisionCommand('deny'));
}

/**
 * `oncegate approvers …`: the API tokens of the people who decide approvals over HTTP and in the console, and the
 * keys that sign their decisions taken from the bus.
 */
export function approversCommand(): Command {
  return tokenCommands({
    group: 'approvers',
    label: 'approver',
    description:
      'The people who decide approvals over HTTP and in the console, and their API tokens: add, list, revoke; the Ed25519 keys that sign ' +
      'their decisions taken from the bus: key add|list|revoke, and sign-decision for their tooling.',
    directory: (folder) => folder.approvers,
    summaries: {
      add: 'Issue an API token for a person who decides approvals over HTTP (printed once, stored hashed).',
      list: 'List approvers and their tokens (ids only).',
      revoke: 'Revoke every token of an approver; the approvals API answers 401 from then on.',
    },
  })
    .addCommand(approverKeyCommand())
    .addCommand(signDecisionCommand());
}
