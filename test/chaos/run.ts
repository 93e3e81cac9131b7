import { parseArgs } from 'node:util';
import { markdownTable } from '../support/markdown-table';
import { countAndOnly, exitWith, integerOption } from '../support/run-options';
import { campaignPassed, findingsOf, runCampaign, summaryRows } from './campaign';
import { ChaosWorld } from './world';

/**
 * The fault campaign: `npm run chaos -- --trials N [--seed S] [--only I] [--quiet]`. Prints one line per trial,
 * every finding with the trial's replayable description, and the table; exits 1 when any duplicate, lost
 * acknowledged event, stuck execution or lie was found, 2 on a usage error.
 */
const USAGE = 'usage: npm run chaos -- --trials N [--seed S] [--only I] [--quiet]';



async function main(): Promise<number> {
  let options;
  try {
    const { values } = parseArgs({
      options: { trials: { type: 'string' }, seed: { type: 'string' }, only: { type: 'string' }, quiet: { type: 'boolean' }, help: { type: 'boolean' } },
      strict: true,
    });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    const { count: trials, only } = countAndOnly('trials', values.trials, values.only, 'trial');
    const seed = integerOption('seed', values.seed, Date.now() % 2 ** 31);
    options = { trials, seed, ...(only === undefined ? {} : { only }), quiet: values.quiet === true };
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }

  process.stdout.write(`fault campaign: ${options.trials} trials, seed ${options.seed}${options.only === undefined ? '' : `, only trial ${options.only}`}\n`);
  const started = Date.now();
  const world = await ChaosWorld.start();
  if (world.sshUnavailable) process.stdout.write(`remote_command trials are skipped: ${world.sshUnavailable}\n`);
  try {
    const report = await runCampaign(world, {
      ...options,
      log: (line) => {
        if (!options.quiet || !line.startsWith('ok') || line.startsWith('skip')) process.stdout.write(`${line}\n`);
      },
    });
    process.stdout.write(`\n### fault campaign, seed ${options.seed}, ${report.verdicts.length} trials, ${Math.round((Date.now() - started) / 1000)} s\n\n`);
    process.stdout.write(markdownTable(summaryRows(report)));
    const failing = report.verdicts.filter((verdict) => findingsOf(verdict).length > 0);
    if (failing.length > 0) {
      process.stdout.write(`\n${failing.length} trial(s) with findings; replay one with --seed ${options.seed} --only <trial>:\n`);
      for (const verdict of failing) process.stdout.write(`  ${verdict.description}\n${findingsOf(verdict).map((f) => `    ${f}\n`).join('')}`);
    }
    return campaignPassed(report) ? 0 : 1;
  } finally {
    await world.stop();
  }
}

exitWith(main());
