import { describeFaultCampaign } from '../chaos/fault-campaign-suite';

/** The long fault campaign: 2,000 trials (`ONCEGATE_SOAK_SEED` replays a seed; the default draws a new one). */
const seed = Number(process.env['ONCEGATE_SOAK_SEED'] ?? Date.now() % 2 ** 31);
console.log(`fault campaign soak: seed ${seed}`);
describeFaultCampaign({ trials: 2_000, seed, timeoutMs: 4 * 60 * 60_000 });
