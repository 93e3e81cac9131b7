/**
 * Instants and durations inside the domain. Durations are whole milliseconds; parsing "5m" is the contracts
 * library's job. Instants are ISO-8601 strings that arrive inside commands (the domain never reads a clock).
 */

/** An ISO-8601 instant with a date, a time and a zone (`Z` or `±hh:mm`). */
export type IsoInstant = string;

export const SECOND_MS = 1_000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;

/** docs/design.md section 5: an idempotent write's redelivery grace when its contract names none (other classes: `RECOVERY_POLICIES`). */
export const DEFAULT_REDELIVERY_GRACE_MS = 60 * SECOND_MS;

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The last instant read and its milliseconds: a call's commands carry one `now` that its steps check and compare many
 * times over (about ten readings a call), and reading it again is a regular expression and a date parse each time.
 */
let lastRead: { readonly instant: string; readonly ms: number } = { instant: '', ms: Number.NaN };

/** Milliseconds of a string that `isIsoInstant` accepts, else NaN. */
function readInstant(value: string): number {
  if (value === lastRead.instant) return lastRead.ms;
  const ms = ISO_INSTANT.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isNaN(ms)) lastRead = { instant: value, ms };
  return ms;
}

export function isIsoInstant(value: unknown): value is IsoInstant {
  return typeof value === 'string' && !Number.isNaN(readInstant(value));
}

/** A duration the domain accepts: a finite, non-negative whole number of milliseconds. */
export function isDurationMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Milliseconds since the epoch of an instant already validated with `isIsoInstant`. */
export function epochMsOf(instant: IsoInstant): number {
  const ms = readInstant(instant);
  return Number.isNaN(ms) ? Date.parse(instant) : ms;
}

/** The instant `ms` after `instant`, as a UTC ISO string. */
export function addMs(instant: IsoInstant, ms: number): IsoInstant {
  return new Date(epochMsOf(instant) + ms).toISOString();
}

/** True when `a` lies strictly before `b`, whatever zone each was written in. */
export function isBefore(a: IsoInstant, b: IsoInstant): boolean {
  return epochMsOf(a) < epochMsOf(b);
}
