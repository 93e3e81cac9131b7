import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EventStore } from '@oncegate/event-store';
import type { StorePair } from '@oncegate/event-store/testing';
import { openPostgresStorePair } from '@oncegate/event-store-postgres/testing';
import { openSqliteStorePair } from '@oncegate/event-store-sqlite/testing';
import { initVault, lockVault, storeCredential, unlockVault, VaultLockedError, type VaultContext } from '@oncegate/vault';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
import { VaultService } from './vault-service';

const MASTER = { ONCEGATE_MASTER_KEY: 'a master key for the vault tests' };
const URL_A = 'http://127.0.0.1:8790/config';

const STORES: Array<[string, () => Promise<StorePair<EventStore>>]> = [
  ['PostgreSQL', async () => openPostgresStorePair((await sharedPostgres()).url(), 'vault')],
  ['SQLite', async () => openSqliteStorePair()],
];

/**
 * The gateway's vault as the split services run it: the gateway's store object tells which event types were committed
 * since a position (PostgreSQL from its notifications, SQLite from its commits and the others' between them); the
 * operator's commands (`oncegate vault …`) commit through a store object of their own, as another process does.
 */
describe.each(STORES)('VaultService (%s event store, the operator in another store object)', (_kind, open) => {
  let dataDir: string;
  let stores: StorePair<EventStore>;
  let gatewayStore: EventStore;
  let vault: VaultService;
  const operator = (): VaultContext => ({ store: stores.second, dataDir, env: MASTER, by: 'operator:test' });

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'oncegate-vault-stores-'));
    stores = await open();
    gatewayStore = stores.first;
    await initVault(operator());
    await storeCredential(operator(), { ref: 'demo-writer', kind: 'bearer', bindings: ['127.0.0.1:8790/config'] }, 'first-value');
    vault = new VaultService({ store: gatewayStore, dataDir, env: MASTER });
    await vault.start();
  });

  afterEach(async () => {
    await vault.stop();
    await stores.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Commits an event outside the vault through the gateway's store, as a call's step does. */
  const callStep = (n: number) => gatewayStore.appendToStream(`execution-${n}`, [{ type: 'ExecutionAccepted', data: {} }]);

  it('given an unchanged vault, when credentials are used after each call step, then the store is not asked for the vault stream', async () => {
    // The first use after start may read once: what was heard before the listener connected is unknown.
    await vault.httpCredential('demo-writer', URL_A);
    const revision = vi.spyOn(gatewayStore, 'streamRevision');
    const reads = vi.spyOn(gatewayStore, 'readStream');
    for (let n = 0; n < 5; n += 1) {
      await callStep(n);
      // Once the step's own commit is heard (a few milliseconds; on a machine that busy, maybe more than the vault
      // waits for it, and it would then read once), the notifications tell that no vault event came in between.
      await vi.waitFor(async () => expect(await gatewayStore.notifiedSince?.(0, [])).toBeDefined(), { timeout: 5_000, interval: 5 });
      expect(await vault.httpCredential('demo-writer', URL_A)).toEqual({ headers: { Authorization: 'Bearer first-value' }, secrets: ['first-value'] });
      expect((await vault.refresh()).locked).toBe(false);
    }
    expect(revision).not.toHaveBeenCalled();
    expect(reads).not.toHaveBeenCalled();
  });

  it('given nothing of the vault under way, when it is refreshed, then the store is asked once whether a vault event was committed', async () => {
    await vault.httpCredential('demo-writer', URL_A);
    for (let n = 0; n < 3; n += 1) {
      await callStep(n);
      const asked = vi.spyOn(gatewayStore as Required<EventStore>, 'notifiedSince');
      expect((await vault.refresh()).locked).toBe(false);
      // PostgreSQL answers with a promise (it may wait for a notification): the read waits for that one, it asks no other.
      expect(asked).toHaveBeenCalledTimes(1);
      asked.mockRestore();
    }
  });

  it('given a lock committed by another process a moment ago, when the next call step uses the vault, then it is refused; after an unlock it serves again', async () => {
    await vault.httpCredential('demo-writer', URL_A);
    for (let n = 0; n < 20; n += 1) {
      await lockVault(operator(), `incident ${n}`);
      // The call's step is made after the lock's append was answered: the lock counts, heard or not.
      await callStep(n);
      const refused = await vault.httpCredential('demo-writer', URL_A).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(VaultLockedError);
      expect((refused as Error).message).toContain(`incident ${n}`);
      await unlockVault(operator());
      await callStep(100 + n);
      expect((await vault.refresh()).locked).toBe(false);
    }
  });

  it('given a lock committed by another process a moment ago, when the vault is used with no step of its own since, then it is refused all the same', async () => {
    await vault.httpCredential('demo-writer', URL_A);
    await lockVault(operator(), 'right now');
    // This process knows of no commit after the lock; the lock's own notification is what it waits on, or it reads.
    await gatewayStore.headPosition();
    await expect(vault.httpCredential('demo-writer', URL_A)).rejects.toBeInstanceOf(VaultLockedError);
  });

  it('given a credential stored again by another process a moment ago, when it is used, then the new version goes out, never the removed one', async () => {
    await vault.httpCredential('demo-writer', URL_A);
    for (let n = 2; n <= 6; n += 1) {
      await storeCredential(operator(), { ref: 'demo-writer', kind: 'bearer', bindings: ['127.0.0.1:8790/config'] }, `value-${n}`);
      expect(await vault.httpCredential('demo-writer', URL_A)).toEqual({ headers: { Authorization: `Bearer value-${n}` }, secrets: [`value-${n}`] });
      expect(vault.describe('demo-writer')).toMatchObject({ version: n });
    }
  });
});
