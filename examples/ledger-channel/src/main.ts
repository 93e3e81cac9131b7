// The ledger channel's dispatcher as a process of its own, beside `oncegate start` on the same configuration.
import { ledgerKit } from './ledger-channel.js';

await ledgerKit.main();
