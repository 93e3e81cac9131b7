import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markdownTable } from '../support/markdown-table';
import { runCampaign, summaryRows, type CampaignReport } from './campaign';
import { ChaosWorld } from './world';

/**
 * A bounded sample of the fault campaign (`npm run chaos -- --trials N` runs the long one). Seed 263 draws all
 * five classes and every fault within 20 trials, among them two kills of the gateway and answers lost after
 * they reached the agent's socket and retried after the redelivery grace, for an idempotent write and for an
 * irreversible call.
 */
const SEED = 263;
const TRIALS = 20;

describe('fault campaign: drops, kill -9 and target faults across the five operation classes', () => {
  let world: ChaosWorld;
  let report: CampaignReport;
  const lines: string[] = [];

  beforeAll(async () => {
    world = await ChaosWorld.start();
    report = await runCampaign(world, { trials: TRIALS, seed: SEED, log: (line) => lines.push(line) });
    console.log(`${lines.join('\n')}\n\n${markdownTable(summaryRows(report))}`);
  }, 170_000);

  afterAll(async () => {
    await world?.stop();
  });

  const findings = (pick: (verdict: CampaignReport['verdicts'][number]) => readonly string[]) =>
    report.verdicts.flatMap((verdict) => pick(verdict).map((finding) => `${verdict.description}: ${finding}`));

  it('given every trial ran its fault and its retries, then each got a final answer or a recorded reason why not', () => {
    const ran = report.verdicts.filter((verdict) => verdict.skipped === undefined);
    expect(ran.length).toBeGreaterThanOrEqual(world.sshd === undefined ? 18 : TRIALS);
    expect(ran.every((verdict) => verdict.answers.length > 0)).toBe(true);
  });

  it('given a retry after any fault, then no intent has more than one effect at the target', () => {
    expect(findings((verdict) => verdict.duplicates)).toEqual([]);
  });

  it('given a restart or a retry, then every answer the agent got is still supported by the journal, and every effect has its Dispatched', () => {
    expect(findings((verdict) => verdict.lost)).toEqual([]);
  });

  it('given the retries ended, then no execution is left without an answerable state and no answer contradicts the journal', () => {
    expect(findings((verdict) => verdict.stuck)).toEqual([]);
    expect(findings((verdict) => verdict.lies)).toEqual([]);
  });
});
