import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '@oncegate/contracts';
import { CONFIG_SCHEMAS, differingFiles, generateConfigSchemas, MESSAGE_KEYWORDS, OUTPUT_DIR, ROOT } from './generate';

const SCHEMA_DIR = join(ROOT, OUTPUT_DIR);
const MODELINE = /^# yaml-language-server: \$schema=(\S+)\n/;

function committed(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SCHEMA_DIR, name), 'utf8')) as Record<string, unknown>;
}

/** The YAML files of the repository that are a gateway configuration or a tool contract file, by what they hold. */
function configurationFiles(): { file: string; schema: string }[] {
  const found: { file: string; schema: string }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!['node_modules', 'dist', 'templates'].includes(entry.name)) walk(path);
      } else if (/\.ya?ml$/.test(entry.name)) {
        const text = readFileSync(join(ROOT, path), 'utf8');
        if (/^tools:/m.test(text) && /^version: /m.test(text)) found.push({ file: path, schema: 'tools.schema.json' });
        else if (/^oncegate[\w-]*\.ya?ml$/.test(entry.name)) found.push({ file: path, schema: 'oncegate.schema.json' });
      }
    }
  };
  for (const dir of ['examples', 'deploy', 'test', 'libs', 'apps']) walk(dir);
  return found.sort((a, b) => a.file.localeCompare(b.file));
}

/** Files whose mistakes are the point: a test asserts each issue at its line, and an editor may flag them too. */
const DELIBERATELY_INVALID = ['libs/contracts/fixtures/typos.yaml'];

/** Every schema object below `schema`, with its JSON pointer. */
function* subschemas(schema: unknown, pointer = ''): Generator<[string, Record<string, unknown>]> {
  if (Array.isArray(schema)) {
    for (const [index, item] of schema.entries()) yield* subschemas(item, `${pointer}/${index}`);
    return;
  }
  if (typeof schema !== 'object' || schema === null) return;
  yield [pointer, schema as Record<string, unknown>];
  for (const [key, value] of Object.entries(schema)) {
    if (key !== 'examples' && key !== 'default' && key !== 'const' && key !== 'enum') yield* subschemas(value, `${pointer}/${key}`);
  }
}

describe('the configuration schemas in schemas/', () => {
  it('given the TypeScript types as they are now, when the schemas are generated again, then they are exactly the committed files', { timeout: 120_000 }, () => {
    expect(differingFiles(generateConfigSchemas(), SCHEMA_DIR), 'run npm run schemas').toEqual([]);
  });

  it('given each schema, then it is draft 2020-12, every property says what it is for, every pattern and alternative says what it wants', () => {
    for (const source of CONFIG_SCHEMAS) {
      const schema = committed(source.output);
      expect(schema).toMatchObject({ $schema: 'https://json-schema.org/draft/2020-12/schema', $id: source.id });
      const problems: string[] = [];
      for (const [pointer, node] of subschemas(schema)) {
        for (const [name, property] of Object.entries((node['properties'] ?? {}) as Record<string, Record<string, unknown>>)) {
          if (typeof property['description'] !== 'string') problems.push(`${pointer}/properties/${name} has no description`);
        }
        if (typeof node['pattern'] === 'string' && typeof node['patternErrorMessage'] !== 'string') {
          problems.push(`${pointer} has a pattern without a patternErrorMessage`);
        }
        if (Array.isArray(node['anyOf']) && typeof node['errorMessage'] !== 'string') problems.push(`${pointer} has anyOf without an errorMessage`);
      }
      expect(problems, source.output).toEqual([]);
    }
  });

  it('given the duration pattern of the schemas, then it takes exactly what the loaders turn into milliseconds', () => {
    const pattern = new RegExp(((committed('tools.schema.json')['$defs'] as Record<string, { pattern: string }>)['DurationText']!).pattern, 'u');
    for (const text of ['0', '500ms', '90s', '5m', '2h', '1d', '1h30m', '1d2h3m4s5ms', '5 minutes', '90', '1.5s', 's', '', '1H', '-1s', '0s']) {
      expect(pattern.test(text), text).toBe(parseDuration(text) !== undefined);
    }
  });
});

describe('the YAML files of the repository against the published schemas', () => {
  const files = configurationFiles();
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addVocabulary([...MESSAGE_KEYWORDS]);
  const validators = new Map(CONFIG_SCHEMAS.map((source) => [source.output, ajv.compile(committed(source.output))]));

  it('given the examples, deploy layouts and test suites, then their configuration and contract files are found', () => {
    expect(files.map((entry) => entry.file)).toEqual(
      expect.arrayContaining(['examples/oncegate.yaml', 'examples/tools.yaml', 'deploy/local/oncegate.yaml', 'test/support/test-tools.yaml', 'test/chaos/chaos-tools.yaml', 'test/conformance/conformance-tools.yaml']),
    );
  });

  it.each(files.filter((entry) => !DELIBERATELY_INVALID.includes(entry.file)).map((entry) => [entry.file, entry.schema]))(
    'given %s, then its first line names %s for editors, and it is valid against it as an editor would check it',
    (file, schemaName) => {
      const text = readFileSync(join(ROOT, file), 'utf8');
      const modeline = MODELINE.exec(text);
      expect(modeline, `${file} starts with # yaml-language-server: $schema=<relative path>`).not.toBeNull();
      expect(relative(ROOT, resolve(dirname(join(ROOT, file)), modeline![1]!))).toBe(`${OUTPUT_DIR}/${schemaName}`);
      const validate = validators.get(schemaName)!;
      const valid = validate(parse(text, { merge: true }));
      expect(valid ? [] : validate.errors?.map((error) => `${error.instancePath} ${error.message ?? error.keyword}`), file).toEqual([]);
    },
  );
});
