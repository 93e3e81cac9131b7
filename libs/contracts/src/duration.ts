const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

const DURATION = /^(?:\d+(?:ms|s|m|h|d))+$/;
const PART = /(\d+)(ms|s|m|h|d)/g;

/** The accepted duration forms, for error messages. */
export const DURATION_FORMS = '500ms, 90s, 5m, 2h, 1d, 1h30m, or 0';

/**
 * Milliseconds of a contract duration: `500ms`, `90s`, `5m`, `2h`, `1d`, combinations such as `1h30m`,
 * or `0` (number or string). Anything else — including a bare number other than 0 — is `undefined`,
 * because a unitless number is a guess about seconds versus milliseconds.
 */
export function parseDuration(value: unknown): number | undefined {
  if (value === 0 || value === '0') return 0;
  if (typeof value !== 'string' || !DURATION.test(value)) return undefined;
  let total = 0;
  for (const [, amount, unit] of value.matchAll(PART)) {
    total += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  }
  return Number.isSafeInteger(total) ? total : undefined;
}
