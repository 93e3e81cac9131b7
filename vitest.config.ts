import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: '@oncegate/domain/testing', replacement: root('./libs/domain/src/test-support/execution-fixtures.ts') },
      { find: '@oncegate/event-store/chain', replacement: root('./libs/event-store/src/chain.ts') },
      { find: '@oncegate/event-store/worker-entry', replacement: root('./libs/event-store/src/worker-entry.ts') },
      { find: '@oncegate/event-store/testing', replacement: root('./libs/event-store/src/testing/index.ts') },
      { find: '@oncegate/dispatcher-kit/testing', replacement: root('./libs/dispatcher-kit/src/testing/index.ts') },
      { find: '@oncegate/demo-target', replacement: root('./apps/demo-target/src/index.ts') },
      { find: '@oncegate/deploy-local', replacement: root('./deploy/local/index.ts') },
      { find: /^@oncegate\/service-host\/(.+)$/, replacement: `${root('./libs/service-host/src/')}$1` },
      { find: /^@oncegate\/([a-z-]+)$/, replacement: root('./libs/$1/src/index.ts') },
    ],
  },
  test: {
    include: ['libs/**/*.spec.ts', 'apps/**/*.spec.ts', 'test/**/*.spec.ts', 'tools/**/*.spec.ts', 'deploy/**/*.spec.ts'],
    reporters: ['default', './tools/summary-reporter.ts'],
    globalSetup: ['./tools/vitest-build.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
