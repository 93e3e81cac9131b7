import type { IsoInstant } from '@oncegate/domain';

/** Time enters the domain only through commands; services read it from one injectable clock. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export function isoNow(clock: Clock): IsoInstant {
  return clock.now().toISOString() as IsoInstant;
}
