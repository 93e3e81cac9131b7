export { startDemoTarget } from './demo-target';
export type { DemoTarget, DemoTargetOptions, EffectLog, RecordedRequest } from './demo-target';
export type { Ticket } from './ticket-desk';
