import { defineConfig } from 'vitest/config';
import { ALIAS, TEST_PROJECTS } from './tools/test-projects.ts';

export default defineConfig({
  resolve: { alias: ALIAS },
  test: {
    reporters: ['default', './tools/summary-reporter.ts'],
    // The apps are built once, and the shared PostgreSQL and Kafka are started on first use, for every tier.
    globalSetup: ['./tools/vitest-build.ts', './tools/vitest-servers.ts'],
    // The tiers, and which files share a worker: tools/test-projects.ts.
    projects: TEST_PROJECTS,
  },
});
