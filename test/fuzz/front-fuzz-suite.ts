import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markdownTable } from '../support/markdown-table';
import { runFuzz, type FuzzReport } from './fuzz-front';
import { fuzzPassed, startFuzzWorld } from './fuzz-world';

/**
 * RSS may move by this much after the settle period without counting as growth (as `npm run fuzz` allows). The
 * gateway's baseline is taken before the frames reach code it has not run yet; compiled with its packages in one
 * bundle it starts about 20 MiB smaller and ends the run where it ended before (184–195 MiB, against 171–199 with the
 * packages loaded file by file), so the same end reads as 13–22 MiB of growth instead of 7.
 */
const RSS_SLACK_MIB = 32;

/**
 * The MCP front fuzzer as a test suite: `frames` frames drawn from `seed` against one gateway process, then a test
 * per promise. The end-to-end tier runs a bounded sample (fuzz.e2e.spec.ts), `npm run soak` the long run.
 */
export function describeFrontFuzz({ frames: FRAMES, seed: SEED, timeoutMs }: { frames: number; seed: number; timeoutMs: number }): void {
  describe('MCP front fuzz: generated hostile frames against a real gateway process', () => {
    let world: Awaited<ReturnType<typeof startFuzzWorld>>;
    let report: FuzzReport;

    beforeAll(async () => {
      world = await startFuzzWorld();
      report = await runFuzz(world, { frames: FRAMES, seed: SEED, maxRequestBytes: world.maxRequestBytes, settleMs: 2_000 });
      console.log(
        `${markdownTable(report.rows)}\ngateway RSS: cold ${report.rssBaselineKiB} KiB, warm ${report.rssWarmKiB} KiB, after ${report.rssAfterKiB} KiB\n` +
          report.findings.slice(0, 20).map((f) => `frame ${f.frame} (${f.kind}): ${f.what}`).join('\n'),
      );
    }, timeoutMs);

    afterAll(async () => {
      await world?.stop();
    });

    const findings = (what: RegExp) => report.findings.filter((finding) => what.test(finding.what)).map((f) => `frame ${f.frame} (${f.kind}): ${f.what} — ${f.excerpt}`);

    it('given every frame, then each is answered within the bound and none with a 5xx', () => {
      expect(report.frames).toBe(FRAMES);
      expect(findings(/^no answer/)).toEqual([]);
      expect(findings(/^HTTP 5/)).toEqual([]);
    });

    it('given only invalid or non-dispatching frames, then nothing is accepted into an execution stream and nothing reaches the target', () => {
      expect(findings(/ExecutionAccepted/)).toEqual([]);
      expect(report.targetRequests).toBe(0);
    });

    it('given the run is over and the gateway settled, then its memory is back within the slack of its baseline', () => {
      expect(fuzzPassed(report, RSS_SLACK_MIB).problems.filter((problem) => /RSS/.test(problem))).toEqual([]);
    });
  });
}
