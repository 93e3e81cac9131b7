import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// Packages the pure domain must never reach: frameworks, database clients, network clients.
const infrastructure = [
  '@nestjs/*',
  'reflect-metadata',
  'rxjs',
  'better-sqlite3',
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

export default [
  { ignores: ['**/node_modules/**', '**/dist/**', '**/.nx/**', '**/.oncegate/**', '**/fixtures/lint/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts', '**/*.mjs'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            {
              sourceTag: 'type:domain',
              onlyDependOnLibsWithTags: ['type:domain'],
              bannedExternalImports: infrastructure,
            },
            { sourceTag: 'type:port', onlyDependOnLibsWithTags: ['type:domain', 'type:port'] },
            { sourceTag: 'type:adapter', onlyDependOnLibsWithTags: ['type:domain', 'type:port', 'type:adapter'] },
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:domain', 'type:port', 'type:adapter', 'type:testing'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:domain', 'type:port', 'type:adapter', 'type:testing', 'type:app'] },
          ],
        },
      ],
    },
  },
];
