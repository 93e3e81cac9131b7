import { describeFrontFuzz } from './front-fuzz-suite';

/** A bounded sample of the MCP front fuzzer (`npm run soak` and `npm run fuzz -- --frames N` run the long one). */
describeFrontFuzz({ frames: 1_000, seed: 20261130, timeoutMs: 120_000 });
