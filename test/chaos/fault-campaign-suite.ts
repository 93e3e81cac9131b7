import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markdownTable } from '../support/markdown-table';
import { runCampaign, summaryRows, type CampaignReport } from './campaign';
import { ChaosWorld } from './world';

/**
 * The fault campaign as a test suite: `trials` trials drawn from `seed` on one world, then a test per promise. The
 * end-to-end tier runs a bounded sample (chaos.e2e.spec.ts), `npm run soak` the long campaign.
 */
export function describeFaultCampaign({ trials: TRIALS, seed: SEED, timeoutMs }: { trials: number; seed: number; timeoutMs: number }): void {
  describe('fault campaign: drops, kill -9 and target faults across the five operation classes', () => {
    let world: ChaosWorld;
    let report: CampaignReport;
    const lines: string[] = [];

    beforeAll(async () => {
      world = await ChaosWorld.start();
      report = await runCampaign(world, { trials: TRIALS, seed: SEED, log: (line) => lines.push(line) });
      console.log(`${lines.join('\n')}\n\n${markdownTable(summaryRows(report))}`);
    }, timeoutMs);

    afterAll(async () => {
      await world?.stop();
    });

    const findings = (pick: (verdict: CampaignReport['verdicts'][number]) => readonly string[]) =>
      report.verdicts.flatMap((verdict) => pick(verdict).map((finding) => `${verdict.description}: ${finding}`));

    it('given every trial ran its fault and its retries, then each got a final answer or a recorded reason why not', () => {
      const ran = report.verdicts.filter((verdict) => verdict.skipped === undefined);
      // Only a remote command is ever skipped, and only on a machine without sshd.
      const skipped = report.verdicts.filter((verdict) => verdict.skipped !== undefined);
      expect(skipped.length === 0 || world.sshd === undefined).toBe(true);
      expect(ran.length + skipped.length).toBe(TRIALS);
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
}
