// The ledger channel under the dispatcher kit's conformance suite: its target is a file, so the faults are made at the
// driver's boundary (DriverFaults), and its tools name no credential.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OperationClass } from '@oncegate/dispatcher-kit';
import { DriverFaults, type ConformanceOptions, type ConformanceSubject } from '@oncegate/dispatcher-kit/testing';
import { ledgerKit, readLedger } from '../src/ledger-channel.js';

export const CLASSES: readonly OperationClass[] = ['read_only', 'idempotent_write', 'irreversible'];

export const OPTIONS: ConformanceOptions = { classes: CLASSES, noCredential: 'the ledger is a local file: its tools name no credential' };

export async function ledgerSubject(): Promise<ConformanceSubject> {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-conformance-'));
  const file = join(dir, 'ledger.jsonl');
  writeFileSync(file, '');
  const { kit, faults } = DriverFaults.around(ledgerKit);
  const tool = (operationClass: OperationClass) => `  - name: conformance_${operationClass}
    description: The ${operationClass} tool of the ledger.
    class: ${operationClass}
    channel: ledger
    target: ledger/main
    correlation_window: 10m
    limits: { connect_timeout: 1s, response_timeout: 1s }
    input_schema: { type: object, properties: { n: { type: integer } }, required: [n], additionalProperties: false }
    plugin: { file: ${JSON.stringify(file)}, account: main, amount: "{{args.n}}" }`;
  return {
    kit,
    contract: `version: 1\ntools:\n${CLASSES.map(tool).join('\n')}\n`,
    target: {
      effects: async (executionId) => readLedger(file).filter((entry) => entry.executionId === executionId).length,
      loseNextAnswer: () => faults.loseNextAnswer(),
      withholdNextAnswer: () => faults.withholdNextAnswer(),
      faultStruck: () => faults.faultStruck(),
      unreachable: (on) => faults.unreachable(on),
    },
    args: (_operationClass, n) => ({ n }),
    async close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
