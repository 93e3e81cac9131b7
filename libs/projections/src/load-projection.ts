/**
 * `oncegate projection run <module>`: a built-in projection by name, or a user's module (a .ts or .js file that
 * exports `projection`), imported dynamically. A module that is not a projection is refused with the file and
 * what is missing.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fingerprintIndex } from './builtin/fingerprint-index';
import { openExecutions } from './builtin/open-executions';
import { possibleDuplicateIntentsProjection } from './builtin/possible-duplicate-intents';
import { runsByActor } from './builtin/runs-by-actor';
import type { Projection } from './projection';

/** Projections are generic in their state; the runner needs nothing of it beyond the projection's own functions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry of differently typed states
export type AnyProjection = Projection<any>;

export const BUILTIN_PROJECTIONS: Readonly<Record<string, AnyProjection>> = {
  [fingerprintIndex.name]: fingerprintIndex,
  [runsByActor.name]: runsByActor,
  [openExecutions.name]: openExecutions,
  [possibleDuplicateIntentsProjection.name]: possibleDuplicateIntentsProjection,
};

export interface LoadedProjection {
  readonly projection: AnyProjection;
  /** Built-ins carry no checkpoint between runs: they rebuild from zero. */
  readonly builtin: boolean;
  /** The built-in's name or the module's absolute path. */
  readonly origin: string;
}

export class ProjectionModuleError extends Error {
  readonly kind = 'projection_module_invalid' as const;
  constructor(
    readonly specifier: string,
    readonly reason: string,
  ) {
    super(`${specifier}: ${reason}`);
    this.name = 'ProjectionModuleError';
  }
}

export function isBuiltinProjection(specifier: string): boolean {
  return Object.hasOwn(BUILTIN_PROJECTIONS, specifier);
}

export interface LoadProjectionOptions {
  /** Relative module paths resolve against it. Default `process.cwd()`. */
  readonly cwd?: string;
}

export async function loadProjectionModule(
  specifier: string,
  options: LoadProjectionOptions = {},
): Promise<LoadedProjection> {
  if (isBuiltinProjection(specifier)) {
    return { projection: BUILTIN_PROJECTIONS[specifier]!, builtin: true, origin: specifier };
  }
  const file = isAbsolute(specifier) ? specifier : resolve(options.cwd ?? process.cwd(), specifier);
  if (!existsSync(file)) {
    const names = Object.keys(BUILTIN_PROJECTIONS).join(', ');
    throw new ProjectionModuleError(specifier, `no built-in projection by that name (${names}) and no file ${file}`);
  }
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new ProjectionModuleError(file, `could not be imported: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!('projection' in module)) {
    const exported = Object.keys(module).join(', ') || 'nothing';
    throw new ProjectionModuleError(file, `exports no \`projection\` (it exports ${exported})`);
  }
  const problems = projectionProblems(module['projection']);
  if (problems.length > 0) {
    throw new ProjectionModuleError(file, `\`projection\` is not a projection: ${problems.join('; ')}`);
  }
  return { projection: module['projection'] as AnyProjection, builtin: false, origin: file };
}

/** What a value lacks to be a `Projection`; empty when it is one. */
export function projectionProblems(value: unknown): string[] {
  if (typeof value !== 'object' || value === null) return [`expected an object, got ${value === null ? 'null' : typeof value}`];
  const candidate = value as Record<string, unknown>;
  const problems: string[] = [];
  for (const field of ['name', 'description'] as const) {
    if (typeof candidate[field] !== 'string' || (candidate[field] as string).length === 0) {
      problems.push(`${field} must be a non-empty string`);
    }
  }
  for (const field of ['initialState', 'evolve', 'rows'] as const) {
    if (typeof candidate[field] !== 'function') problems.push(`${field} must be a function`);
  }
  const params = candidate['params'];
  if (params !== undefined) {
    if (typeof params !== 'object' || params === null || Array.isArray(params)) {
      problems.push('params must be an object: { <name>: { description, default? } }');
    } else {
      for (const [name, param] of Object.entries(params as Record<string, unknown>)) {
        const { description, default: fallback } = (param ?? {}) as { description?: unknown; default?: unknown };
        if (typeof description !== 'string' || description.length === 0) problems.push(`params.${name}.description must be a non-empty string`);
        if (fallback !== undefined && typeof fallback !== 'string') problems.push(`params.${name}.default must be a string (parameters are given as text)`);
      }
    }
  }
  const key = candidate['key'];
  if (key !== undefined && !(Array.isArray(key) && key.length > 0 && key.every((column) => typeof column === 'string' && column.length > 0))) {
    problems.push('key must be a non-empty list of column names');
  }
  const filter = candidate['filter'];
  if (filter !== undefined) {
    if (typeof filter !== 'object' || filter === null) {
      problems.push('filter must be an object');
    } else {
      for (const field of ['streamPrefixes', 'eventTypes'] as const) {
        const list = (filter as Record<string, unknown>)[field];
        if (list !== undefined && !(Array.isArray(list) && list.every((item) => typeof item === 'string'))) {
          problems.push(`filter.${field} must be a list of strings`);
        }
      }
    }
  }
  return problems;
}
