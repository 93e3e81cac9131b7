import { readdirSync, readFileSync } from 'node:fs';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// Packages the pure domain must never reach: frameworks, database clients, network clients.
const infrastructure = [
  '@nestjs/*',
  'reflect-metadata',
  'rxjs',
  'node:sqlite',
  'pg',
  'pg-*',
  '@kurrent/*',
  '@eventstore/*',
  'kafkajs',
  'undici',
  'ssh2',
  '@modelcontextprotocol/*',
  'node:http',
  'node:https',
  'node:net',
  'node:fs',
  'node:child_process',
  'http',
  'https',
  'net',
  'fs',
  'child_process',
];

// Nx's bannedExternalImports only sees packages, not Node's own modules: those are refused by ESLint's rule.
const builtinInfrastructure = infrastructure.filter((name) => /^(node:)?(http|https|net|fs|child_process|sqlite)$/.test(name));

// The source folders of the libraries tagged type:domain.
const domainSources = readdirSync('libs', { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .filter((entry) => {
    try {
      return JSON.parse(readFileSync(`libs/${entry.name}/project.json`, 'utf8')).tags?.includes('type:domain');
    } catch {
      return false;
    }
  })
  .map((entry) => `libs/${entry.name}/src/**/*.ts`);

// A library is imported by its index (`@oncegate/<library>`) or by an entry point tsconfig.base.json names (`/testing`,
// the event store's chain and worker entry): what a library keeps behind its index may move without its importers
// knowing, and a library can be packaged on its own. A path into a library's folders resolves nowhere and is refused.
const entryPoints = Object.keys(JSON.parse(readFileSync('tsconfig.base.json', 'utf8')).compilerOptions.paths);
const deepImports = {
  group: ['@oncegate/*/**', ...entryPoints.filter((name) => name.split('/').length > 2).map((name) => `!${name}`)],
  message: "import the library by its index, or by an entry point named in tsconfig.base.json's paths",
};

export default [
  { ignores: ['**/node_modules/**', '**/dist/**', '**/.nx/**', '**/.oncegate/**', '**/fixtures/lint/**', 'schemas/*.validate.mjs', 'schemas/*.validate.d.mts'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.mts', '**/*.mjs'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': ['error', { patterns: [deepImports] }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          // The dispatcher kit's testing entries name the kit's public types by the package's name, so that their
          // rolled-up declarations import them from the package instead of declaring them a second time.
          allowCircularSelfDependency: true,
          // The hash chain is pure (node:crypto and the canonical writer): defined beside the store port, where every
          // adapter links events, and imported from there by the journal's verifier, a domain library.
          // The suites under test/ reach their shared harness (test/support, a project of its own so that a library's
          // tests can use it without depending on the end-to-end suites) by a relative path.
          allow: ['@oncegate/event-store/chain', '@oncegate/event-store/worker-entry', '^(\\.\\./)+support/'],
          depConstraints: [
            {
              sourceTag: 'type:domain',
              onlyDependOnLibsWithTags: ['type:domain'],
              bannedExternalImports: infrastructure,
            },
            { sourceTag: 'type:port', onlyDependOnLibsWithTags: ['type:domain', 'type:port'] },
            { sourceTag: 'type:adapter', onlyDependOnLibsWithTags: ['type:domain', 'type:port', 'type:adapter'] },
            // The services' libraries: each service's Nest module and how a process hosts it, on the shared host. The
            // gateway's front answers the approvals and console APIs in the shapes the console reads (type:api).
            { sourceTag: 'type:service', onlyDependOnLibsWithTags: ['type:domain', 'type:port', 'type:adapter', 'type:service', 'type:api'] },
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:domain', 'type:port', 'type:adapter', 'type:service', 'type:testing', 'type:deploy', 'type:client', 'type:api'] },
            // The agents' client helper stands on the official MCP client alone.
            { sourceTag: 'type:client', onlyDependOnLibsWithTags: [] },
            // deploy/local starts processes and servers: it needs none of the code it starts.
            { sourceTag: 'type:deploy', onlyDependOnLibsWithTags: [] },
            // The JSON the gateway answers, shared by the server and the browser console: it needs nothing else.
            { sourceTag: 'type:api', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:domain', 'type:port', 'type:adapter', 'type:service', 'type:testing', 'type:app', 'type:client', 'type:api'] },
          ],
        },
      ],
    },
  },
  {
    // The browser console imports these shapes: types only, so its bundle never takes code (or a server module) from here.
    files: ['libs/console-api/src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['ExportNamedDeclaration[exportKind="value"]', 'ExportDefaultDeclaration', 'ExportAllDeclaration', 'ImportDeclaration[importKind="value"]'].map((selector) => ({
          selector,
          message: '@oncegate/console-api holds types only: use export type, interface and import type',
        })),
      ],
    },
  },
  {
    files: domainSources,
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        // This setting replaces the one above for the domain's files: it refuses deep imports as well.
        {
          paths: builtinInfrastructure.map((name) => ({ name, message: 'the domain stays free of I/O: use a port and an adapter' })),
          patterns: [deepImports],
        },
      ],
    },
  },
];
