import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OperationClass } from '@oncegate/domain';
import { defineChannel } from '../define-channel';
import { DriverFaults } from './driver-faults';
import { describeDispatcherConformance } from './vitest';

/**
 * A channel whose target is a file, not a server: a ledger where each effect is a line holding the execution id. No
 * connection to put a proxy in, no credential: the faults come from `DriverFaults` at the driver's boundary. The
 * idempotent write appends only when the execution id is not in the ledger yet; the payment appends every time (it is
 * never sent twice by the kit: its unknown outcome goes to review).
 */
const ledgerKit = defineChannel({
  name: 'ledger',
  classes: ['read_only', 'idempotent_write', 'irreversible'],
  contract: {
    check(section, report) {
      if (typeof section['file'] !== 'string' || section['file'] === '') report(['file'], 'the ledger file to write to');
    },
  },
  open() {
    const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter((line) => line !== '');
    return {
      async send(attempt) {
        const file = attempt.section['file'] as string;
        const entry = `${attempt.executionId} ${attempt.tool.name}`;
        if (attempt.operationClass === 'read_only') return { kind: 'observed', outcome: 'succeeded', body: JSON.stringify({ entries: lines(file).length }) };
        if (attempt.operationClass === 'idempotent_write' && lines(file).some((line) => line.startsWith(`${attempt.executionId} `))) {
          return { kind: 'observed', outcome: 'succeeded', body: JSON.stringify({ recorded: 'earlier' }) };
        }
        appendFileSync(file, `${entry}\n`);
        return { kind: 'observed', outcome: 'succeeded', body: JSON.stringify({ recorded: 'now' }) };
      },
    };
  },
});

const CLASSES: readonly OperationClass[] = ['read_only', 'idempotent_write', 'irreversible'];

describeDispatcherConformance(
  'ledger (a file, faults at the driver boundary, no credential)',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-ledger-'));
    const file = join(dir, 'ledger.txt');
    appendFileSync(file, '');
    const { kit, faults } = DriverFaults.around(ledgerKit);
    const tool = (operationClass: OperationClass) => `  - name: conformance_${operationClass}
    description: The ${operationClass} tool of the ledger.
    class: ${operationClass}
    channel: ledger
    target: ledger/entries
    correlation_window: 10m
    limits: { connect_timeout: 1s, response_timeout: 1s }
    input_schema: { type: object, properties: { n: { type: integer } }, required: [n], additionalProperties: false }
    plugin: { file: "${file}" }`;
    return {
      kit,
      contract: `version: 1\ntools:\n${CLASSES.map(tool).join('\n')}\n`,
      target: {
        effects: async (executionId) => readFileSync(file, 'utf8').split('\n').filter((line) => line.startsWith(`${executionId} `)).length,
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
  },
  { classes: CLASSES, noCredential: 'the ledger is a local file: its tools name no credential' },
);
