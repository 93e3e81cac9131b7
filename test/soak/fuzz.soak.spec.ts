import { describeFrontFuzz } from '../fuzz/front-fuzz-suite';

/** The long fuzz run: 20,000 frames (`ONCEGATE_SOAK_SEED` replays a seed; the default draws a new one). */
const seed = Number(process.env['ONCEGATE_SOAK_SEED'] ?? Date.now() % 2 ** 31);
console.log(`front fuzz soak: seed ${seed}`);
describeFrontFuzz({ frames: 20_000, seed, timeoutMs: 2 * 60 * 60_000 });
