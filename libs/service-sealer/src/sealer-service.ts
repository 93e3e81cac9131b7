import type { Host, ServiceDefinition } from '@oncegate/service-host';
import { initSealKeys, loadSealPrivateKey, loadSealPublicKey, sealKeyPaths } from '@oncegate/vault';
import { JournalSealer } from './journal-sealer';

/** The journal's sealer in this process, unless `seal_every` is 0. */
export function hostSealer(host: Host): JournalSealer | undefined {
  const { config, env, store, clock } = host;
  if (config.sealEveryMs <= 0) return undefined;
  initSealKeys(config.dataDir, env, { dev: config.devToken });
  const sealer = new JournalSealer(store, loadSealPrivateKey(config.dataDir, env), loadSealPublicKey(sealKeyPaths(config.dataDir).publicKey), clock, config.sealEveryMs);
  sealer.start();
  host.opened.push({ close: () => sealer.stop() });
  return sealer;
}

/** `oncegate serve sealer`. */
export const sealerService: ServiceDefinition = {
  name: 'sealer',
  async serve(host) {
    const sealer = hostSealer(host);
    if (sealer === undefined) host.logger.warn(`seal_every is 0 in ${host.config.source}: this sealer seals nothing`, 'sealer');
    return { close: async () => sealer?.stop() };
  },
};
