export { JournalSealer } from './journal-sealer';
export { hostSealer, sealerService } from './sealer-service';
