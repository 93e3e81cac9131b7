import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import type { TestProjectInlineConfiguration } from 'vitest/config';

const root = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * The workspace's import names, as tsconfig.base.json's paths give them (one list for tsc, esbuild and the tests):
 * each an exact match, so that `@oncegate/x/testing` never resolves under `@oncegate/x`.
 */
const { compilerOptions } = JSON.parse(readFileSync(root('./tsconfig.base.json'), 'utf8')) as { compilerOptions: { paths: Record<string, [string]> } };
const alias = Object.entries(compilerOptions.paths).map(([name, [target]]) => ({ find: new RegExp(`^${name.replaceAll('/', '\\/')}$`), replacement: root(target) }));

const everywhere = (suffix: string) => ['libs', 'apps', 'test', 'tools', 'deploy'].map((folder) => `${folder}/**/*.${suffix}.spec.ts`);

/**
 * The tests' workers. The integration and end-to-end tiers wait on processes, servers and a target's delays, but the
 * processes they start (a gateway, the CLI, the services) are what the machine spends most of a run on: one file
 * more than the machine has cores keeps both busy without slowing every file down.
 * `ONCEGATE_TEST_WORKERS` overrides the number.
 */
const cores = availableParallelism();
const waitingWorkers = Number(process.env['ONCEGATE_TEST_WORKERS'] ?? Math.max(3, cores + 1));

/** One tier: its files by name (`*.<tier>.spec.ts`); tiers of one group share its workers, groups run one after another. */
function tier(
  name: string,
  suffix: string,
  options: { groupOrder: number; maxWorkers: number; isolate?: boolean; testTimeout?: number; hookTimeout?: number },
): TestProjectInlineConfiguration {
  return {
    resolve: { alias },
    test: {
      name,
      include: everywhere(suffix),
      pool: 'forks',
      isolate: options.isolate ?? true,
      maxWorkers: options.maxWorkers,
      sequence: { groupOrder: options.groupOrder },
      testTimeout: options.testTimeout ?? 30_000,
      hookTimeout: options.hookTimeout ?? 60_000,
    },
  };
}

export default defineConfig({
  resolve: { alias },
  test: {
    reporters: ['default', './tools/summary-reporter.ts'],
    // The apps are built once, and the shared PostgreSQL and Kafka are started on first use, for every tier.
    globalSetup: ['./tools/vitest-build.ts', './tools/vitest-servers.ts'],
    projects: [
      // Pure code. In the same pool as the two tiers below, queued after them (projects are queued by name): the unit
      // files fill the workers while the last long files end, instead of the whole run waiting on the unit tier first.
      // They mock no module and stub no global, so a worker goes on to the next file with the modules it has imported
      // (the unit tier alone: 46 s of CPU instead of 65).
      tier('unit', 'unit', { groupOrder: 1, maxWorkers: waitingWorkers, isolate: false }),
      // Real components and real processes, files side by side; the end-to-end files are queued first, being the longest.
      tier('integration', 'int', { groupOrder: 1, maxWorkers: waitingWorkers }),
      // The end-to-end files drive processes from the outside and mock nothing in their own: a worker is reused for
      // the next file instead of starting and importing afresh for each (the integration tier mocks modules and
      // fills disks, so each of its files keeps a worker of its own).
      tier('e2e', 'e2e', { groupOrder: 1, maxWorkers: waitingWorkers, isolate: false }),
      // The long campaigns (`npm run soak`): never part of `npm test`, which runs their bounded samples.
      tier('soak', 'soak', { groupOrder: 2, maxWorkers: 1, testTimeout: 3 * 60 * 60_000, hookTimeout: 3 * 60 * 60_000 }),
    ],
  },
});
