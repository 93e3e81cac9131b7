import { parseArgs } from 'node:util';
import { markdownTable } from '../support/markdown-table';
import { countAndOnly, exitWith, integerOption, UsageError } from '../support/run-options';
import { fuzzPassed, startFuzzWorld, type FuzzVerdict } from './fuzz-world';
import { runFuzz } from './fuzz-front';

/**
 * The fuzzer of the MCP front: `npm run fuzz -- --frames N [--seed S] [--only I] [--rss-slack-mib M]`. Prints
 * the table, every finding with its frame index (replay it with --seed S --only I) and the gateway's memory
 * before and after; exits 1 on any finding, 2 on a usage error.
 */
const USAGE = 'usage: npm run fuzz -- --frames N [--seed S] [--only I] [--settle-ms MS] [--rss-slack-mib M]';



async function main(): Promise<number> {
  let options;
  try {
    const { values } = parseArgs({
      options: {
        frames: { type: 'string' },
        seed: { type: 'string' },
        only: { type: 'string' },
        'settle-ms': { type: 'string' },
        'rss-slack-mib': { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
    });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    const { count: frames, only } = countAndOnly('frames', values.frames, values.only, 'frame');
    const settleMs = integerOption('settle-ms', values['settle-ms'], 5_000);
    const slackMiB = integerOption('rss-slack-mib', values['rss-slack-mib'], 32);
    if (settleMs < 0 || slackMiB < 0) throw new UsageError('--settle-ms and --rss-slack-mib must not be negative');
    options = { frames, seed: integerOption('seed', values.seed, Date.now() % 2 ** 31), ...(only === undefined ? {} : { only }), settleMs, slackMiB };
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }

  process.stdout.write(`MCP front fuzz: ${options.frames} frames, seed ${options.seed}${options.only === undefined ? '' : `, only frame ${options.only}`}\n`);
  const started = Date.now();
  const world = await startFuzzWorld();
  try {
    const report = await runFuzz(world, { ...options, maxRequestBytes: world.maxRequestBytes, log: (line) => process.stdout.write(`${line}\n`) });
    const verdict: FuzzVerdict = fuzzPassed(report, options.slackMiB);
    process.stdout.write(`\n### MCP front fuzz, seed ${options.seed}, ${report.frames} frames, ${Math.round((Date.now() - started) / 1000)} s\n\n`);
    process.stdout.write(markdownTable(report.rows));
    process.stdout.write(
      `\nsessions opened: ${report.sessionsOpened}; initializes refused: ${report.initializesRefused}; ExecutionAccepted appended: ${report.executionsAccepted}; requests at the target: ${report.targetRequests}\n` +
        `gateway RSS: cold ${(report.rssBaselineKiB / 1024).toFixed(1)} MiB, warm (after a tenth of the frames) ${(report.rssWarmKiB / 1024).toFixed(1)} MiB, ` +
        `after ${(report.rssAfterKiB / 1024).toFixed(1)} MiB (+${((report.rssAfterKiB - report.rssWarmKiB) / 1024).toFixed(1)} MiB over warm; allowed +${options.slackMiB} MiB)\n`,
    );
    for (const finding of report.findings.slice(0, 50)) {
      process.stdout.write(`  frame ${finding.frame} (${finding.kind}): ${finding.what}\n    ${finding.excerpt}\n`);
    }
    if (report.findings.length > 50) process.stdout.write(`  … and ${report.findings.length - 50} more findings\n`);
    for (const problem of verdict.problems) process.stdout.write(`FAIL ${problem}\n`);
    return verdict.problems.length === 0 ? 0 : 1;
  } finally {
    await world.stop();
  }
}

exitWith(main());
