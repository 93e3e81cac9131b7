// A channel whose target is a ledger file: each effect is one line holding the execution id. The execution id is the
// ledger's idempotency key: an attempt that finds its id already written reports what was written, and writes
// nothing again — the same promise a payment provider keeps with an Idempotency-Key.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { defineChannel, templateValue, type ChannelAttempt, type SendOutcome } from '@oncegate/dispatcher-kit';

/** One line of the ledger. */
export interface LedgerEntry {
  readonly executionId: string;
  readonly attempt: number;
  readonly tool: string;
  readonly account: string;
  readonly amount: number;
  readonly currency: string;
}

/** The tool's `plugin:` section: which ledger file, which account, and the amount (a template of the arguments). */
const SECTION_SCHEMA = {
  type: 'object',
  properties: {
    file: { type: 'string', minLength: 1, description: 'The ledger file (created when missing).' },
    account: { type: 'string', minLength: 1, description: 'The account every call of the tool books to.' },
    amount: { type: 'string', description: 'The amount, usually a template such as "{{args.amount}}".' },
  },
  required: ['file', 'account'],
  additionalProperties: false,
} as const;

/** The channel's options: `channels.ledger` in oncegate.yaml. */
const OPTIONS_SCHEMA = {
  type: 'object',
  properties: {
    currency: { type: 'string', pattern: '^[A-Z]{3}$', default: 'EUR', description: 'The currency every amount is booked in.' },
  },
  additionalProperties: false,
} as const;

/** Every entry of a ledger file, in order. */
export function readLedger(file: string): LedgerEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LedgerEntry);
}

function booked(entry: LedgerEntry, earlier: boolean): SendOutcome {
  return { kind: 'observed', outcome: 'succeeded', contentType: 'application/json', body: JSON.stringify({ booked: entry, ...(earlier ? { note: 'booked by an earlier attempt; not booked again' } : {}) }) };
}

function send(attempt: ChannelAttempt, currency: string): SendOutcome {
  const file = attempt.section['file'] as string;
  const account = attempt.section['account'] as string;
  if (attempt.operationClass === 'read_only') {
    const balance = readLedger(file)
      .filter((entry) => entry.account === account)
      .reduce((sum, entry) => sum + entry.amount, 0);
    return { kind: 'observed', outcome: 'succeeded', contentType: 'application/json', body: JSON.stringify({ account, balance }) };
  }
  const earlier = readLedger(file).find((entry) => entry.executionId === attempt.executionId);
  if (earlier !== undefined) return booked(earlier, true);
  const amount = Number(templateValue(String(attempt.section['amount'] ?? '0'), attempt.args, attempt.executionId));
  if (!Number.isFinite(amount)) return { kind: 'not_sent', reason: `the amount of ${attempt.tool.name} is not a number` };
  const entry: LedgerEntry = { executionId: attempt.executionId, attempt: attempt.attempt, tool: attempt.tool.name, account, amount, currency };
  appendFileSync(file, `${JSON.stringify(entry)}\n`);
  return booked(entry, false);
}

/** The ledger channel: `channel: ledger` in a contract, `node dist/src/main.js --config oncegate.yaml` to run it. */
export const ledgerKit = defineChannel({
  name: 'ledger',
  // The ledger keeps the execution id: a write sent again is recognised, so idempotent writes may be retried and
  // irreversible ones are still never sent twice by the kit (their unknown outcome goes to review).
  classes: ['read_only', 'idempotent_write', 'irreversible'],
  contract: { schema: SECTION_SCHEMA },
  options: { schema: OPTIONS_SCHEMA },
  open({ log, tools, options }) {
    const currency = options['currency'] as string;
    log.log(`the ledger channel serves ${tools.size} tool(s) in ${currency}: ${[...tools.keys()].join(', ')}`);
    return { send: async (attempt) => send(attempt, currency) };
  },
});
