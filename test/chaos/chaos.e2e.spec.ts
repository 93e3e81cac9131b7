import { describeFaultCampaign } from './fault-campaign-suite';

/**
 * A bounded sample of the fault campaign (`npm run soak` and `npm run chaos -- --trials N` run the long one). Seed 263
 * draws all five classes and every fault within 20 trials, among them two kills of the gateway and answers lost after
 * they reached the agent's socket and retried after the redelivery grace, for an idempotent write and for an
 * irreversible call.
 */
describeFaultCampaign({ trials: 20, seed: 263, timeoutMs: 170_000 });
