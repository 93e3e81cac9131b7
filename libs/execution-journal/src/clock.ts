import type { IsoInstant } from '@oncegate/domain';

/** Time enters the domain only through commands; services read it from one injectable clock. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The system clock's last millisecond written out: a call's steps ask for the time about ten times, often in one. */
let lastWritten = { ms: Number.NaN, iso: '' as IsoInstant };

export function isoNow(clock: Clock): IsoInstant {
  if (clock !== systemClock) return clock.now().toISOString() as IsoInstant;
  const ms = Date.now();
  if (ms !== lastWritten.ms) lastWritten = { ms, iso: new Date(ms).toISOString() as IsoInstant };
  return lastWritten.iso;
}
