/**
 * The test projects (tiers) and the import names they resolve, for `vitest.config.ts`; apart from it so that a test can
 * read them without loading vitest's configuration machinery.
 */
import { globSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { TestProjectInlineConfiguration } from 'vitest/config';

/** A path of the repository, from its root. */
const root = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url));

/**
 * The workspace's import names, as tsconfig.base.json's paths give them (one list for tsc, esbuild and the tests):
 * each an exact match, so that `@oncegate/x/testing` never resolves under `@oncegate/x`.
 */
const { compilerOptions } = JSON.parse(readFileSync(root('tsconfig.base.json'), 'utf8')) as { compilerOptions: { paths: Record<string, [string]> } };
export const ALIAS = Object.entries(compilerOptions.paths).map(([name, [target]]) => ({ find: new RegExp(`^${name.replaceAll('/', '\\/')}$`), replacement: root(target) }));

const everywhere = (suffix: string) => ['libs', 'apps', 'test', 'tools', 'deploy'].map((folder) => `${folder}/**/*.${suffix}.spec.ts`);

/**
 * What a test file may do to the modules and globals of the process it runs in, for the files after it: mock a module,
 * stub a global or a variable, spy on a class's prototype, fake the clock. A file that does none of these runs in a
 * worker that goes on to the next file with the modules already imported; one that does keeps a worker of its own.
 */
const CHANGES_ITS_PROCESS = /\bvi\.(mock|doMock|unmock|hoisted|stubGlobal|stubEnv|useFakeTimers)\b|\.prototype\b/;
const integrationFiles = everywhere('int').flatMap((pattern) => globSync(pattern, { cwd: root(''), exclude: (name) => name === 'node_modules' }));
const integrationOnItsOwn = integrationFiles.filter((file) => CHANGES_ITS_PROCESS.test(readFileSync(root(file), 'utf8')));

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
  options: { groupOrder: number; maxWorkers: number; isolate?: boolean; testTimeout?: number; hookTimeout?: number; include?: string[]; exclude?: string[] },
): TestProjectInlineConfiguration {
  return {
    resolve: { alias: ALIAS },
    test: {
      name,
      include: options.include ?? everywhere(suffix),
      ...(options.exclude === undefined ? {} : { exclude: ['**/node_modules/**', ...options.exclude] }),
      pool: 'forks',
      isolate: options.isolate ?? true,
      maxWorkers: options.maxWorkers,
      sequence: { groupOrder: options.groupOrder },
      testTimeout: options.testTimeout ?? 30_000,
      hookTimeout: options.hookTimeout ?? 60_000,
    },
  };
}

/** The projects, in the order vitest.config.ts gives them. */
export const TEST_PROJECTS: TestProjectInlineConfiguration[] = [
  // Pure code. In the same pool as the two tiers below, queued after them (projects are queued by name): the unit
  // files fill the workers while the last long files end, instead of the whole run waiting on the unit tier first.
  // They mock no module and stub no global, so a worker goes on to the next file with the modules it has imported
  // (the unit tier alone: 46 s of CPU instead of 65).
  tier('unit', 'unit', { groupOrder: 1, maxWorkers: waitingWorkers, isolate: false }),
  // Real components and real processes, files side by side; the end-to-end files are queued first, being the longest.
  // A worker goes on to the next file with the modules it has imported (Nest, node-postgres, the services), except
  // after a file that changes its process (CHANGES_ITS_PROCESS): those run as the next project, a worker each.
  tier('integration', 'int', { groupOrder: 1, maxWorkers: waitingWorkers, isolate: false, exclude: integrationOnItsOwn }),
  tier('integration-own-worker', 'int', { groupOrder: 1, maxWorkers: waitingWorkers, include: integrationOnItsOwn }),
  // The end-to-end files drive processes from the outside and mock nothing in their own: a worker is reused for
  // the next file instead of starting and importing afresh for each.
  tier('e2e', 'e2e', { groupOrder: 1, maxWorkers: waitingWorkers, isolate: false }),
  // The long campaigns (`npm run soak`): never part of `npm test`, which runs their bounded samples.
  tier('soak', 'soak', { groupOrder: 2, maxWorkers: 1, testTimeout: 3 * 60 * 60_000, hookTimeout: 3 * 60 * 60_000 }),
];
