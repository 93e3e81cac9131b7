import { evolve, initialState, type ExecutionStatus } from '@oncegate/domain';
import type { RecordedEvent } from '@oncegate/event-store';
import { toDomainEvent } from '@oncegate/execution-journal';
import { AgentConnection, callOnce, type AgentAnswer } from './agent';
import { CHAOS_CLASSES, TOOL_OF_CLASS, describePlan, planTrials, type ChaosClass, type TrialPlan } from './plan';
import type { ChaosWorld, TargetRequest } from './world';

export interface CampaignOptions {
  readonly trials: number;
  readonly seed: number;
  /** Run only this trial of the seed's plan (to replay a failure). */
  readonly only?: number;
  /** Tries of the agent per trial, the first included. Default 6. */
  readonly maxTries?: number;
  /** How long an execution may stay without an answerable state after the agent's last try. Default 10 s. */
  readonly stuckBoundMs?: number;
  /** Progress lines (one per trial, and every finding). */
  readonly log?: (line: string) => void;
}

/** What one trial found. Every list entry is a finding written for a person, naming the execution. */
export interface TrialVerdict {
  readonly plan: TrialPlan;
  readonly description: string;
  /** Why the trial did not run (no sshd for a remote command). */
  readonly skipped?: string;
  readonly executions: readonly string[];
  readonly answers: readonly AgentAnswer[];
  /** Side effects the target (or the host) saw for this trial's intent. */
  effects: number;
  duplicates: string[];
  readonly finalState: string | null;
  readonly stuck: readonly string[];
  readonly lies: readonly string[];
  lost: string[];
  /** JSON-RPC errors the agent got instead of a tool result. */
  readonly errors: number;
}

export interface CampaignReport {
  readonly seed: number;
  readonly verdicts: readonly TrialVerdict[];
}

/** An answer after which the agent stops retrying: the outcome, a definite refusal, or a hold for a person. */
const FINAL_STATES = new Set(['completed', 'delivered', 'completed_result_not_delivered', 'failed', 'denied', 'needs_review', 'abandoned', 'expired']);
const IN_PROGRESS = new Set<ExecutionStatus>(['initial', 'accepted', 'awaiting_approval', 'authorized', 'dispatched']);
const COMPLETED = new Set(['completed', 'delivered', 'completed_result_not_delivered']);

const PATIENCE_MS = 6_000;
const RETRY_SOON_MS = 150;
const RETRY_LATER_MS = 250;
/** The chaos idempotent write's redelivery grace is 1 s; a retry "after the grace" comes this much later. */
const AFTER_GRACE_MS = 1_300;

/** The arguments of a trial's call: unique per trial, so one intent per trial, and the key argument that names it. */
export function trialCall(plan: TrialPlan): { tool: string; args: Record<string, unknown>; key: string; value: string } {
  const i = plan.index;
  const tool = TOOL_OF_CLASS[plan.operationClass];
  switch (plan.operationClass) {
    case 'read_only':
      return { tool, args: { build_id: String(100_000 + i) }, key: 'build_id', value: String(100_000 + i) };
    case 'idempotent_write':
      return { tool, args: { name: `chaos.t${i}`, value: `v${i}` }, key: 'name', value: `chaos.t${i}` };
    case 'conditional_write':
      return { tool, args: { sku: `CH-${i}`, quantity: (i % 50) + 1, expected_version: 0 }, key: 'sku', value: `CH-${i}` };
    case 'irreversible':
      return { tool, args: { payment_reference: `chaos-pay-${i}`, amount_cents: 100 + i }, key: 'payment_reference', value: `chaos-pay-${i}` };
    case 'remote_command':
      return { tool, args: { step: `t${i}`, pause: (plan.targetDelayMs / 1000).toFixed(3) }, key: 'step', value: `t${i}` };
  }
}

/** The target endpoint a trial's request goes to, as a fault-rule match (the exact path where it has one). */
function targetMatch(plan: TrialPlan): string {
  const { args } = trialCall(plan);
  switch (plan.operationClass) {
    case 'read_only':
      return `GET /builds/${String(args['build_id'])}`;
    case 'idempotent_write':
      return `PUT /config/${String(args['name'])}`;
    case 'conditional_write':
      return `PUT /inventory/${String(args['sku'])}`;
    case 'irreversible':
      return 'POST /payments';
    case 'remote_command':
      throw new Error('a remote command has no HTTP endpoint');
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The execution ids whose accepted record is this trial's call. */
function executionsOf(world: ChaosWorld, plan: TrialPlan): string[] {
  const { tool, key, value } = trialCall(plan);
  const ids: string[] = [];
  for (const [id, accepted] of world.journal.acceptedExecutions()) {
    if (accepted.toolName === tool && accepted.record.arguments[key] === value) ids.push(id);
  }
  return ids;
}

/** Every status an execution passed through, folded from its stream. */
function statusesOf(events: readonly RecordedEvent[]): { visited: Set<string>; last: ExecutionStatus; dispatched: boolean } {
  let state = initialState();
  const visited = new Set<string>();
  for (const event of events) {
    state = evolve(state, toDomainEvent(event));
    visited.add(state.status);
  }
  return { visited, last: state.status, dispatched: events.some((event) => event.type === 'Dispatched') };
}

function family(state: string): string {
  if (COMPLETED.has(state)) return 'completed';
  if (IN_PROGRESS.has(state as ExecutionStatus)) return 'in_progress';
  return state;
}

/** Fault rules armed on the target before the first call. */
async function armTarget(world: ChaosWorld, plan: TrialPlan): Promise<void> {
  if (plan.operationClass === 'remote_command') return;
  const match = targetMatch(plan);
  switch (plan.fault) {
    case 'target_hold':
      return world.target.control('hold', { match, times: 1 });
    case 'target_reset':
      return world.target.control('reset', { match, times: 1 });
    case 'target_5xx':
      return world.target.control('behave', { match, action: 'status', status: 502, applyEffect: true, times: 1 });
    default:
      if (plan.targetDelayMs > 0) await world.target.control('behave', { match, action: 'delay', ms: plan.targetDelayMs, times: 1 });
  }
}

/** The fault that strikes `atMs` after the first call was sent; resolves when it has fully happened. */
async function strike(world: ChaosWorld, plan: TrialPlan, connection: AgentConnection): Promise<void> {
  switch (plan.fault) {
    case 'drop_after_answer':
    case 'target_reset':
    case 'target_5xx':
      return;
    case 'drop_before_answer':
      await sleep(plan.atMs);
      return connection.dropAll();
    case 'kill_gateway':
      await sleep(plan.atMs);
      return world.killAndRestart();
    case 'target_hold':
      await sleep(plan.atMs);
      return world.target.control('release', { match: targetMatch(plan) });
    case 'ssh_drop':
      await sleep(plan.atMs);
      return world.sshd?.killConnections();
  }
}

async function runTrial(world: ChaosWorld, plan: TrialPlan, options: CampaignOptions): Promise<TrialVerdict> {
  const description = describePlan(plan, options.seed);
  const empty = { plan, description, executions: [], answers: [], effects: 0, duplicates: [], finalState: null, stuck: [], lies: [], lost: [], errors: 0 };
  if (plan.operationClass === 'remote_command' && world.sshd === undefined) return { ...empty, skipped: world.sshUnavailable ?? 'no sshd' };

  const { tool, args } = trialCall(plan);
  const requestsBefore = (await world.targetRequests()).length;
  await armTarget(world, plan);
  const answers: AgentAnswer[] = [];
  const tryOnce = async (connection: AgentConnection) => {
    await world.ready();
    const answer = await callOnce({
      url: world.gateway.url,
      token: world.gateway.devToken,
      tool,
      args,
      connection,
      patienceMs: PATIENCE_MS,
      generation: () => world.generation,
    });
    answers.push(answer);
    return answer;
  };

  const first = new AgentConnection();
  first.swallowCallAnswer = plan.fault === 'drop_after_answer';
  const fault = strike(world, plan, first);
  let last = await tryOnce(first);
  await fault;
  const maxTries = options.maxTries ?? 6;
  for (let tries = 1; tries < maxTries && !(last.kind === 'result' && FINAL_STATES.has(last.state)); tries++) {
    await sleep(tries === 1 ? (plan.retry === 'after_grace' ? AFTER_GRACE_MS : RETRY_SOON_MS) : RETRY_LATER_MS);
    last = await tryOnce(new AgentConnection());
  }
  await world.clearTargetFaults();

  // Recovery (status query, marker probe, review) may still be under way: give it the bound, then judge.
  const deadline = Date.now() + (options.stuckBoundMs ?? 10_000);
  let streams = new Map<string, RecordedEvent[]>();
  for (;;) {
    await world.journal.catchUp();
    streams = new Map(await Promise.all(executionsOf(world, plan).map(async (id) => [id, await world.journal.executionStream(id)] as const)));
    const pending = [...streams.values()].some((events) => IN_PROGRESS.has(statusesOf(events).last));
    if (!pending || Date.now() > deadline) break;
    await sleep(100);
  }
  // Executions an answer named but the journal does not list (lost on a crash) are read too.
  for (const answer of answers) {
    if (answer.kind === 'result' && !streams.has(answer.executionId)) streams.set(answer.executionId, await world.journal.executionStream(answer.executionId));
  }

  const requests = (await world.targetRequests()).slice(requestsBefore);
  const stuck: string[] = [];
  const lies: string[] = [];
  const lost: string[] = [];
  const finalAnswer = answers.findLast((answer) => answer.kind === 'result' && FINAL_STATES.has(answer.state));
  if (finalAnswer === undefined) stuck.push(`no final answer after ${answers.length} tries (last: ${summarise(answers.at(-1))})`);
  for (const [id, events] of streams) {
    if (events.length > 0 && IN_PROGRESS.has(statusesOf(events).last)) stuck.push(`${id} still ${statusesOf(events).last} after the bound`);
  }
  for (const answer of answers) {
    if (answer.kind !== 'result') continue;
    const events = streams.get(answer.executionId) ?? [];
    const problem = unsupported(answer, events, requests, plan.operationClass);
    if (problem === undefined) continue;
    // An answer the journal stopped supporting after a restart is a lost acknowledged event; otherwise a lie.
    (world.generation > answer.generation ? lost : lies).push(problem);
  }
  for (const [id, events] of streams) {
    const sent = requests.filter((request) => request.effect && request.idempotencyKey === id);
    if (sent.length > 0 && events.length > 0 && !statusesOf(events).dispatched) lost.push(`the target acted for ${id}, whose stream has no Dispatched`);
  }
  const verdict: TrialVerdict = {
    plan,
    description,
    executions: [...streams.keys()].filter((id) => (streams.get(id) ?? []).length > 0),
    answers,
    effects: 0,
    duplicates: [],
    finalState: finalAnswer?.kind === 'result' ? finalAnswer.state : null,
    stuck,
    lies,
    lost,
    errors: answers.filter((answer) => answer.kind === 'error').length,
  };
  await countEffects(world, verdict);
  return verdict;
}

function summarise(answer: AgentAnswer | undefined): string {
  if (answer === undefined) return 'none';
  switch (answer.kind) {
    case 'result':
      return `${answer.state} for ${answer.executionId}`;
    case 'error':
      return `error ${answer.code}: ${answer.message}`;
    case 'no_answer':
      return answer.why;
  }
}

/** Why the journal (or the target) does not back what the agent was told; `undefined` when it does. */
function unsupported(answer: Extract<AgentAnswer, { kind: 'result' }>, events: readonly RecordedEvent[], requests: readonly TargetRequest[], operationClass: ChaosClass): string | undefined {
  const told = `told '${answer.state}' for ${answer.executionId}`;
  if (events.length === 0) return `${told}, which the journal does not have`;
  const { visited } = statusesOf(events);
  if (![...visited].some((state) => family(state) === family(answer.state))) {
    return `${told}, a state its stream never reached (${[...visited].join(' → ')})`;
  }
  const sent = requests.filter((request) => request.idempotencyKey === answer.executionId);
  if (answer.state === 'cancelled' && sent.length > 0) return `${told} ("before anything was sent"), but the target received ${sent.length} request(s) for it`;
  // `failed` means nothing was sent: an answer of the target, an error one included, is `completed`.
  if (answer.state === 'failed' && sent.length > 0) return `${told} ("nothing was sent"), but the target received ${sent.length} request(s) for it`;
  const http = operationClass !== 'remote_command';
  if (http && COMPLETED.has(answer.state) && !answer.isError && !sent.some((request) => request.status !== null && request.status < 300)) {
    return `${told} as a success, but the target answered no request of it with 2xx`;
  }
  return undefined;
}

/**
 * Effects for the trial's intent as the target counts them (or the host: one line per run of the step), and
 * the effects that no execution of the journal accounts for. Run again at the end of the campaign, since a
 * late effect (a held request released, a recovery) may land after the trial was judged.
 */
async function countEffects(world: ChaosWorld, verdict: TrialVerdict): Promise<void> {
  if (verdict.skipped !== undefined) return;
  const { plan } = verdict;
  const { value } = trialCall(plan);
  if (plan.operationClass === 'remote_command') {
    verdict.effects = world.remoteEffects().filter((line) => line === value).length;
  } else {
    const keys = new Set(verdict.executions);
    const requests = (await world.targetRequests()).filter((request) => request.effect && request.idempotencyKey !== null && keys.has(request.idempotencyKey));
    verdict.effects = requests.length;
  }
  verdict.duplicates =
    verdict.effects > 1 ? [`${verdict.effects} effects for one intent (executions ${verdict.executions.join(', ')})`] : [];
}

/** Runs the trials one after another against one world; the world is the caller's to start and stop. */
export async function runCampaign(world: ChaosWorld, options: CampaignOptions): Promise<CampaignReport> {
  const log = options.log ?? (() => undefined);
  const plans = planTrials(options.seed, options.only === undefined ? options.trials : options.only + 1);
  const selected = options.only === undefined ? plans : plans.slice(options.only);
  const verdicts: TrialVerdict[] = [];
  for (const plan of selected) {
    const started = Date.now();
    const verdict = await runTrial(world, plan, options);
    verdicts.push(verdict);
    const findings = findingsOf(verdict);
    log(`${verdict.skipped ? 'skip' : findings.length > 0 ? 'FAIL' : 'ok  '} ${verdict.description} → ${verdict.skipped ?? verdict.finalState ?? 'no final answer'} (${Date.now() - started} ms)`);
    for (const finding of findings) log(`     ${finding}`);
  }
  // Late effects, and effects at the target that no execution of the journal accounts for.
  await world.journal.catchUp();
  for (const verdict of verdicts) {
    const before = verdict.duplicates.length;
    await countEffects(world, verdict);
    if (verdict.duplicates.length > before) log(`late duplicate in ${verdict.description}: ${verdict.duplicates.join('; ')}`);
  }
  const known = world.journal.acceptedExecutions();
  const orphans = (await world.targetRequests()).filter((request) => request.effect && (request.idempotencyKey === null || !known.has(request.idempotencyKey)));
  if (orphans.length > 0 && verdicts.length > 0) {
    const finding = `${orphans.length} effect(s) at the target that no execution in the journal accounts for (keys ${orphans.map((o) => o.idempotencyKey).join(', ')})`;
    verdicts.at(-1)!.lost.push(finding);
    log(finding);
  }
  return { seed: options.seed, verdicts };
}

export function findingsOf(verdict: TrialVerdict): string[] {
  return [
    ...verdict.duplicates.map((d) => `duplicate: ${d}`),
    ...verdict.lost.map((l) => `lost: ${l}`),
    ...verdict.stuck.map((s) => `stuck: ${s}`),
    ...verdict.lies.map((l) => `lie: ${l}`),
  ];
}

export type ClassRow = {
  readonly class: string;
  readonly trials: number;
  readonly skipped: number;
  readonly effects: number;
  readonly duplicates: number;
  readonly 'unknown/review answers': number;
  readonly stuck: number;
  readonly lies: number;
  readonly 'lost acknowledged': number;
  readonly 'rpc errors': number;
};

/** The campaign's table: one row per class and a total; a trial counts once per kind of finding. */
export function summaryRows(report: CampaignReport): ClassRow[] {
  const row = (name: string, verdicts: readonly TrialVerdict[]): ClassRow => {
    const ran = verdicts.filter((v) => v.skipped === undefined);
    return {
      class: name,
      trials: ran.length,
      skipped: verdicts.length - ran.length,
      effects: ran.reduce((sum, v) => sum + v.effects, 0),
      duplicates: ran.filter((v) => v.duplicates.length > 0).length,
      'unknown/review answers': ran.filter((v) => v.finalState === 'outcome_unknown' || v.finalState === 'needs_review').length,
      stuck: ran.filter((v) => v.stuck.length > 0).length,
      lies: ran.filter((v) => v.lies.length > 0).length,
      'lost acknowledged': ran.filter((v) => v.lost.length > 0).length,
      'rpc errors': ran.reduce((sum, v) => sum + v.errors, 0),
    };
  };
  return [
    ...CHAOS_CLASSES.map((name) => row(name, report.verdicts.filter((v) => v.plan.operationClass === name))),
    row('all', report.verdicts),
  ];
}

/** True when the campaign found nothing that breaks an invariant. */
export function campaignPassed(report: CampaignReport): boolean {
  return report.verdicts.every((verdict) => findingsOf(verdict).length === 0);
}
