import { globSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { TestProjectInlineConfiguration } from 'vitest/config';
import { TEST_PROJECTS } from './test-projects';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The projects `npm test` names (`--project <name>`), as package.json's script says. */
function projectsOfNpmTest(): string[] {
  const { scripts } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> };
  return [...scripts['test']!.matchAll(/--project[ =](\S+)/g)].map((match) => match[1]!);
}

/** The files a project of the configuration takes: its `include` globs, less its `exclude` (exact paths and node_modules). */
function filesOf(project: TestProjectInlineConfiguration): string[] {
  const excluded = new Set(project.test?.exclude ?? []);
  return (project.test?.include ?? [])
    .flatMap((pattern) => globSync(pattern, { cwd: ROOT, exclude: (name) => name === 'node_modules' }))
    .filter((file) => !excluded.has(file));
}

/** The repository's test files of one tier (`unit`, `int`, `e2e`), found on their own, apart from the projects' globs. */
function specFiles(suffix: string): string[] {
  return globSync(`{libs,apps,test,tools,deploy}/**/*.${suffix}.spec.ts`, { cwd: ROOT, exclude: (name) => name === 'node_modules' });
}

/** A project's name, given as a string or as a label with its colour. */
function nameOf(project: TestProjectInlineConfiguration): string | undefined {
  const name = project.test?.name;
  return typeof name === 'string' ? name : name?.label;
}

describe('the test projects of vitest.config.ts', () => {
  const projects = TEST_PROJECTS;

  it('given every unit, integration and end-to-end file of the repository, then `npm test` runs each once: in exactly one of the projects it names', () => {
    const named = projectsOfNpmTest();
    expect(named.filter((name) => !projects.some((project) => nameOf(project) === name))).toEqual([]);
    const runs = new Map<string, string[]>();
    for (const project of projects.filter((candidate) => named.includes(nameOf(candidate) ?? ''))) {
      for (const file of filesOf(project)) runs.set(file, [...(runs.get(file) ?? []), nameOf(project)!]);
    }
    const specs = ['unit', 'int', 'e2e'].flatMap(specFiles);
    expect(specs.length).toBeGreaterThan(200);
    expect(specs.filter((file) => runs.get(file)?.length !== 1).map((file) => `${file}: ${runs.get(file)?.join(', ') ?? 'no project'}`)).toEqual([]);
  });

  it('given the integration files that mock a module or spy on a prototype, then each runs in a worker of its own, and the others share theirs', () => {
    const byName = new Map(projects.map((project) => [nameOf(project), project]));
    const own = byName.get('integration-own-worker')!;
    expect(own.test?.isolate).toBe(true);
    expect(byName.get('integration')!.test?.isolate).toBe(false);
    const mocking = specFiles('int').filter((file) => /\bvi\.mock\(|\.prototype\b/.test(readFileSync(`${ROOT}${file}`, 'utf8')));
    expect(mocking.length).toBeGreaterThan(0);
    expect(filesOf(own)).toEqual(expect.arrayContaining(mocking));
  });
});
