import { execFileSync } from 'node:child_process';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The domain stays pure because lint refuses the import, not because we remember. These cases lint
 * source text as if it lived in the domain library, through the workspace's own ESLint config.
 */
describe('module boundaries', () => {
  let eslint: ESLint;

  beforeAll(() => {
    // The Nx rule reads the cached project graph; without one it silently skips itself.
    execFileSync(process.execPath, ['node_modules/nx/dist/bin/nx.js', 'show', 'projects'], {
      env: { ...process.env, NX_DAEMON: 'false' },
      stdio: 'ignore',
    });
    eslint = new ESLint();
  });

  const lint = async (code: string, filePath: string) => {
    const [result] = await eslint.lintText(code, { filePath });
    return result!.messages.filter((m) => m.ruleId === '@nx/enforce-module-boundaries' || m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax');
  };

  it.each([
    ['@nestjs/common', "import { Injectable } from '@nestjs/common';\nexport const x = Injectable;\n"],
    ['node:sqlite', "import { DatabaseSync } from 'node:sqlite';\nexport const x = DatabaseSync;\n"],
    ['pg', "import { Pool } from 'pg';\nexport const x = Pool;\n"],
    ['node:fs', "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n"],
    ['undici', "import { request } from 'undici';\nexport const x = request;\n"],
    ['ssh2', "import { Client } from 'ssh2';\nexport const x = Client;\n"],
    ['kafkajs', "import { Kafka } from 'kafkajs';\nexport const x = Kafka;\n"],
  ])('given the domain library, when it imports %s, then lint fails', async (name, code) => {
    const messages = await lint(code, 'libs/domain/src/lint-probe.ts');
    expect(messages).toHaveLength(1);
    expect(messages[0]!.message).toContain(name);
    expect(messages[0]!.severity).toBe(2);
  });

  it('given the domain library, when it imports the event-store port, then lint fails on the tag rule', async () => {
    const messages = await lint(
      "import { WrongExpectedRevisionError } from '@oncegate/event-store';\nexport const x = WrongExpectedRevisionError;\n",
      'libs/domain/src/lint-probe.ts',
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]!.message).toMatch(/type:domain/);
  });

  it('given an adapter, when it imports the port and its database client, then lint passes', async () => {
    const messages = await lint(
      "import { DatabaseSync } from 'node:sqlite';\nimport { WrongExpectedRevisionError } from '@oncegate/event-store';\nexport const x = [DatabaseSync, WrongExpectedRevisionError];\n",
      'libs/event-store-sqlite/src/lint-probe.ts',
    );
    expect(messages).toEqual([]);
  });

  it('given the PostgreSQL adapter, when it imports the port and node-postgres, then lint passes', async () => {
    const messages = await lint(
      "import { Pool } from 'pg';\nimport { WrongExpectedRevisionError } from '@oncegate/event-store';\nexport const x = [Pool, WrongExpectedRevisionError];\n",
      'libs/event-store-postgres/src/lint-probe.ts',
    );
    expect(messages).toEqual([]);
  });

  it('given the console API shapes, when the gateway and the console pages import them, then lint passes', async () => {
    const code = "import type { ApprovalView } from '@oncegate/console-api';\nexport type Shown = ApprovalView;\n";
    expect(await lint(code, 'libs/service-gateway/src/front/lint-probe.ts')).toEqual([]);
    expect(await lint(code, 'apps/console/src/lint-probe.tsx')).toEqual([]);
  });

  it('given the console API shapes, when they import another library or export a value, then lint fails', async () => {
    const imports = await lint("import type { ExecutionId } from '@oncegate/domain';\nexport type Id = ExecutionId;\n", 'libs/console-api/src/lint-probe.ts');
    expect(imports).toHaveLength(1);
    expect(imports[0]!.message).toMatch(/type:api/);
    const values = await lint("export const PATH = '/console/api';\nexport type Path = typeof PATH;\n", 'libs/console-api/src/lint-probe.ts');
    expect(values).toHaveLength(1);
    expect(values[0]!.message).toContain('types only');
  });

  it.each([
    ['a service library', 'libs/service-gateway/src/lint-probe.ts', "import { parseGatewayConfig } from '@oncegate/host-config/gateway-config';\nexport const x = parseGatewayConfig;\n"],
    ['an app', 'apps/oncegate/src/lint-probe.ts', "import { serviceMain } from '@oncegate/service-host/service-process';\nexport const x = serviceMain;\n"],
    ['a test suite', 'test/e2e/lint-probe.ts', "export { approvalTools } from '@oncegate/host-decisions/approval-fixtures';\n"],
    ['the domain library', 'libs/domain/src/lint-probe.ts', "import { parseContractFile } from '@oncegate/contracts/tools-file';\nexport const x = parseContractFile;\n"],
  ])('given %s, when it imports a path inside another library, then lint fails', async (_who, filePath, code) => {
    const messages = await lint(code, filePath);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.ruleId).toBe('no-restricted-imports');
    expect(messages[0]!.message).toContain('by its index');
    expect(messages[0]!.severity).toBe(2);
  });

  it('given a library and a suite, when they import by index and by the entry points tsconfig names, then lint passes', async () => {
    const code = [
      "import { loadGatewayConfig } from '@oncegate/host-config';",
      "import { serviceMain } from '@oncegate/service-host';",
      "import { approvalTools } from '@oncegate/host-decisions/testing';",
      "import { givenExecution } from '@oncegate/host-recovery/testing';",
      "import { DispatcherWorld } from '@oncegate/dispatcher-kit/host-testing';",
      'export const x = [loadGatewayConfig, serviceMain, approvalTools, givenExecution, DispatcherWorld];',
      '',
    ].join('\n');
    expect(await lint(code, 'libs/service-relay-kafka/src/lint-probe.int.spec.ts')).toEqual([]);
    expect(await lint("import { eventHash } from '@oncegate/event-store/chain';\nexport const x = eventHash;\n", 'libs/journal/src/lint-probe.ts')).toEqual([]);
  });
});
