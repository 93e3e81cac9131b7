import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Names of files in `dir` that differ from what a generator makes now (`expected`: name → content): missing or
 * changed ones, and those of `existing` it no longer makes. Sorted.
 */
export function differingFiles(expected: ReadonlyMap<string, string>, dir: string, existing: readonly string[] = []): string[] {
  const differing = [...expected].filter(([name, content]) => !existsSync(join(dir, name)) || readFileSync(join(dir, name), 'utf8') !== content).map(([name]) => name);
  const stale = existing.filter((name) => !expected.has(name));
  return [...differing, ...stale].sort();
}

/**
 * A generator's command line (`npm run <script> [-- --check]`): writes the files that differ and removes those no
 * longer made, or with `--check` lists them and fails. Returns the exit code: 0, 1 (differs), 2 (usage).
 */
export function syncGeneratedFiles(
  args: readonly string[],
  options: { readonly script: string; readonly root: string; readonly outputDir: string; readonly expected: ReadonlyMap<string, string>; readonly existing?: readonly string[] },
): number {
  const { script, outputDir, expected } = options;
  const unknown = args.filter((arg) => arg !== '--check');
  if (unknown.length > 0) {
    process.stderr.write(`usage: npm run ${script} [-- --check]\nunknown argument: ${unknown.join(' ')}\n`);
    return 2;
  }
  const dir = join(options.root, outputDir);
  const differing = differingFiles(expected, dir, options.existing);
  if (args.includes('--check')) {
    if (differing.length === 0) {
      process.stdout.write(`${outputDir}: ${expected.size} files up to date\n`);
      return 0;
    }
    const lines = differing.map((name) => `  ${outputDir}/${name}${expected.has(name) ? '' : ' (no longer generated)'}\n`);
    process.stderr.write(`${outputDir} differs from what the types make now; run npm run ${script}:\n${lines.join('')}`);
    return 1;
  }
  mkdirSync(dir, { recursive: true });
  for (const name of differing) {
    const content = expected.get(name);
    if (content === undefined) rmSync(join(dir, name));
    else writeFileSync(join(dir, name), content);
  }
  process.stdout.write(differing.length === 0 ? `${outputDir}: ${expected.size} files up to date\n` : `${outputDir}: wrote or removed ${differing.join(', ')}\n`);
  return 0;
}
