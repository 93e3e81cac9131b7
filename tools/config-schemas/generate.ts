/**
 * Generates schemas/: the JSON Schemas (draft 2020-12) of Oncegate's two YAML files, `oncegate.yaml` and the tool
 * contract file, from the TypeScript types that describe them as written (snake_case keys, durations as text). The
 * loaders validate against these files, and editors with the YAML language server read them through the
 * `# yaml-language-server: $schema=…` line of a file. `npm run schemas` writes them; `npm run schemas -- --check`
 * changes nothing and exits 1 naming the files that differ from what the types make now.
 */
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import standaloneCode from 'ajv/dist/standalone/index.js';
import { createGenerator, DEFAULT_CONFIG, type CompletedConfig } from 'ts-json-schema-generator';
import { fileSchemaAjv } from '@oncegate/contracts';
import { differingFiles as differingGeneratedFiles, syncGeneratedFiles } from '../generated-files';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Where the schemas go, relative to the repository root. */
export const OUTPUT_DIR = 'schemas';

/** One published schema: the exported type it is made from, and its file. */
export interface ConfigSchemaSource {
  readonly file: string;
  readonly typeName: string;
  readonly output: string;
  /** The schema compiled ahead of time (ajv's standalone code), which the loader validates with. */
  readonly validator: string;
  readonly id: string;
}

export const CONFIG_SCHEMAS: readonly ConfigSchemaSource[] = [
  { file: 'libs/host-config/src/oncegate-file.ts', typeName: 'OncegateFile', output: 'oncegate.schema.json', validator: 'oncegate.validate.mjs', id: 'oncegate:config:oncegate.yaml:v1' },
  { file: 'libs/contracts/src/tools-file.ts', typeName: 'ToolsFile', output: 'tools.schema.json', validator: 'tools.validate.mjs', id: 'oncegate:config:tools.yaml:v1' },
];

/**
 * Keywords the schemas carry beyond JSON Schema: the reason shown for a value that breaks a pattern
 * (`patternErrorMessage`) or the schema (`errorMessage`). The YAML language server shows them as written; the
 * loaders print them with the value (libs/contracts/src/schema-issues.ts).
 */
export const MESSAGE_KEYWORDS = ['patternErrorMessage', 'errorMessage'] as const;

const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

function generatorConfig(source: ConfigSchemaSource): CompletedConfig {
  return {
    ...DEFAULT_CONFIG,
    path: join(ROOT, source.file),
    tsconfig: join(ROOT, 'tsconfig.base.json'),
    type: source.typeName,
    expose: 'export',
    topRef: false,
    jsDoc: 'extended',
    // A field the loader does not know is a mistake (a typo, or a field at the wrong level): named, with a suggestion.
    additionalProperties: false,
    sortProps: false,
    skipTypeCheck: true,
    extraTags: [...MESSAGE_KEYWORDS],
  };
}

/** Renames draft-07's `definitions` to 2020-12's `$defs`, in references too. */
function toDraft2020(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toDraft2020);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => {
      if (key === '$ref' && typeof child === 'string') return [key, child.replace(/^#\/definitions\//, '#/$defs/')];
      if (key === 'definitions') return ['$defs', toDraft2020(child)];
      return [key, toDraft2020(child)];
    }),
  );
}

/** Sorts the keys of `$defs`, so the file does not depend on the order the generator met the types in. */
function sortedDefs(defs: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (defs === undefined || Object.keys(defs).length === 0) return undefined;
  return Object.fromEntries(Object.entries(defs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function configSchema(source: ConfigSchemaSource): Record<string, unknown> {
  const generated = toDraft2020(createGenerator(generatorConfig(source)).createSchema(source.typeName)) as Record<string, unknown>;
  const { $schema: _draft07, title, description, $defs, ...root } = generated as { $schema: string; title?: string; description?: string; $defs?: Record<string, unknown> };
  const defs = sortedDefs($defs);
  return {
    $schema: DRAFT_2020_12,
    $id: source.id,
    ...(title === undefined ? {} : { title }),
    description: `${description ?? ''}\n\nGenerated from \`${source.typeName}\` in ${source.file} by tools/config-schemas (\`npm run schemas\`).`.trim(),
    ...root,
    ...(defs === undefined ? {} : { $defs: defs }),
  };
}

function formatJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** What the loaders import the compiled validator as. */
const VALIDATOR_TYPES = `import type { ValidateFunction } from 'ajv';\n\nexport declare const validate: ValidateFunction;\nexport default validate;\n`;

/**
 * The schema compiled by the loaders' own ajv set-up into a module: a process that reads a configuration then loads a
 * function instead of compiling the schema each time it starts.
 */
function compiledValidator(source: ConfigSchemaSource, schema: object): string {
  const ajv = fileSchemaAjv({ source: true, esm: true });
  const code = standaloneCode(ajv, ajv.compile(schema));
  return `// Generated from ${OUTPUT_DIR}/${source.output} by tools/config-schemas (\`npm run schemas\`): do not edit.\n${code}\n`;
}

/** Every file of schemas/ as the types make it now: file name → content. */
export function generateConfigSchemas(): Map<string, string> {
  return new Map(
    CONFIG_SCHEMAS.flatMap((source) => {
      const schema = configSchema(source);
      return [
        [source.output, formatJson(schema)],
        [source.validator, compiledValidator(source, schema)],
        [source.validator.replace(/\.mjs$/, '.d.mts'), VALIDATOR_TYPES],
      ] as const;
    }),
  );
}

/** File names whose committed content differs from `expected`. */
export function differingFiles(expected: ReadonlyMap<string, string>, dir = join(ROOT, OUTPUT_DIR)): string[] {
  return differingGeneratedFiles(expected, dir);
}

function main(args: readonly string[]): number {
  return syncGeneratedFiles(args, { script: 'schemas', root: ROOT, outputDir: OUTPUT_DIR, expected: generateConfigSchemas() });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
