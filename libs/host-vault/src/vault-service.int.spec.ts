import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { initVault, lockVault, storeCredential, unlockVault, type VaultContext } from '@oncegate/vault';
import { CredentialBindingError, CredentialUnavailableError, VaultLockedError } from '@oncegate/vault';
import { vaultFilePath } from '@oncegate/vault';
import { VaultService, type VaultState } from './vault-service';

const MASTER = { ONCEGATE_MASTER_KEY: 'a master key for the vault tests' };
const VALUE = 'vault-canary-5e1b9d7c';
const SSH_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-test-only\n-----END OPENSSH PRIVATE KEY-----\n';

async function eventually<T>(probe: () => T | undefined, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Everything an error exposes: message, stack and own properties. */
function exposed(error: unknown): string {
  const e = error as Error;
  return `${e.message}\n${e.stack}\n${JSON.stringify(error)}`;
}

describe('VaultService (SQLite event store, vault.db in a temporary data folder)', () => {
  let dataDir: string;
  let store: SqliteEventStore;
  let services: VaultService[];
  const context = (): VaultContext => ({ store, dataDir, env: MASTER, by: 'operator:test' });
  const service = async (env: NodeJS.ProcessEnv = MASTER) => {
    const vault = new VaultService({ store, dataDir, env });
    await vault.start();
    services.push(vault);
    return vault;
  };

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'oncegate-vault-'));
    store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
    services = [];
  });

  afterEach(async () => {
    for (const vault of services) await vault.stop();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function withDemoWriter(): Promise<void> {
    await initVault(context());
    await storeCredential(context(), { ref: 'demo-writer', kind: 'bearer', bindings: ['127.0.0.1:8790/config'] }, `${VALUE}\n`);
  }

  it('given no vault, when the gateway starts, then it stops no call but hands out no credential, saying to run oncegate vault init', async () => {
    const vault = await service();
    expect(vault.state()).toEqual({ initialized: false, locked: false, reason: expect.stringContaining('oncegate vault init'), since: null });
    const refused = vault.httpCredential('demo-writer', 'http://127.0.0.1:8790/config/a');
    await expect(refused).rejects.toBeInstanceOf(CredentialUnavailableError);
    await expect(refused).rejects.toThrow(/demo-writer.*no vault in this data folder: run oncegate vault init/);
  });

  it('given credentials of every kind, when asked for a bound target, then each is applied as its kind says', async () => {
    await withDemoWriter();
    await storeCredential(context(), { ref: 'basic-api', kind: 'basic', username: 'bob', bindings: ['api.example.com'] }, VALUE);
    await storeCredential(context(), { ref: 'key-api', kind: 'header', header: 'X-Api-Key', scheme: 'Token', bindings: ['api.example.com:8443'] }, VALUE);
    await storeCredential(context(), { ref: 'deploy-key', kind: 'ssh_key', bindings: ['127.0.0.1:2222'] }, SSH_KEY);
    const vault = await service();

    expect(vault.state()).toMatchObject({ initialized: true, locked: false, reason: 'unlocked by operator:test' });
    expect(statSync(vaultFilePath(dataDir)).mode & 0o777).toBe(0o600);
    expect(await vault.httpCredential('demo-writer', 'http://127.0.0.1:8790/config/pool')).toEqual({ headers: { Authorization: `Bearer ${VALUE}` }, secrets: [VALUE] });
    expect(await vault.httpCredential('basic-api', 'https://API.example.com/v1')).toEqual({
      headers: { Authorization: `Basic ${Buffer.from(`bob:${VALUE}`).toString('base64')}` },
      secrets: [`bob:${VALUE}`, VALUE],
    });
    expect(await vault.httpCredential('key-api', 'https://api.example.com:8443/')).toEqual({ headers: { 'X-Api-Key': `Token ${VALUE}` }, secrets: [VALUE] });
    expect(await vault.sshCredential('deploy-key', '127.0.0.1', 2222)).toEqual({ privateKey: SSH_KEY });
    expect(vault.describe('demo-writer')).toEqual({
      ref: 'demo-writer',
      kind: 'bearer',
      header: null,
      scheme: null,
      bindings: ['127.0.0.1:8790/config'],
      approval: 'none',
      version: 1,
      storedAt: expect.any(String),
      by: 'operator:test',
    });
    expect(JSON.stringify(vault.describe('demo-writer'))).not.toContain(VALUE);
    expect(vault.describe('nobody')).toBeUndefined();
  });

  it('given a credential bound elsewhere, when asked for another host, then the refusal names the ref, the target and the bindings', async () => {
    await withDemoWriter();
    const vault = await service();
    const expected = "credential 'demo-writer' is bound to 127.0.0.1:8790/config, not 10.0.0.5:443/payments";
    expect(vault.checkBinding('demo-writer', { channel: 'http', url: 'https://10.0.0.5/payments' })).toEqual({ ok: false, reason: expected });
    expect(vault.checkBinding('demo-writer', { channel: 'http', url: 'http://127.0.0.1:8790/config/a' })).toEqual({ ok: true });
    expect(vault.checkBinding('demo-writer', { channel: 'http', url: 'http://127.0.0.1:8790/configx' })).toMatchObject({ ok: false });
    expect(vault.checkBinding('demo-writer', { channel: 'ssh', host: '127.0.0.1', port: 8790 })).toMatchObject({ ok: false, reason: expect.stringContaining('bearer') });
    const refused = await vault.httpCredential('demo-writer', 'https://10.0.0.5/payments').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CredentialBindingError);
    expect((refused as Error).message).toBe(expected);
    expect(exposed(refused)).not.toContain(VALUE);
    const unknown = await vault.httpCredential('nobody', 'http://127.0.0.1:8790/config').catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(CredentialUnavailableError);
  });

  it('given another master key in this process, when the gateway starts, then the vault stays locked and says the key does not open it', async () => {
    await withDemoWriter();
    const vault = await service({ ONCEGATE_MASTER_KEY: 'not the master key' });
    expect(vault.state()).toMatchObject({ initialized: true, locked: true, reason: 'the master key does not open this vault' });
    await expect(vault.httpCredential('demo-writer', 'http://127.0.0.1:8790/config')).rejects.toBeInstanceOf(VaultLockedError);
  });

  it('given no master key in this process, when the gateway starts, then the vault stays locked and says where a key comes from', async () => {
    await withDemoWriter();
    const vault = await service({});
    expect(vault.state()).toMatchObject({
      locked: true,
      reason: 'no master key in this process: set ONCEGATE_MASTER_KEY or ONCEGATE_MASTER_KEY_FILE',
    });
  });

  it.each([
    ['bindings', `'["127.0.0.1:8790/config","10.0.0.5"]'`],
    ['kind', `'header'`],
    ['approval', `'per_use'`],
  ])('given the %s column of an entry edited in vault.db, when the credential is asked for, then it is refused, never used', async (column, value) => {
    await withDemoWriter();
    const raw = new DatabaseSync(vaultFilePath(dataDir));
    raw.exec(`UPDATE credentials SET ${column} = ${value} WHERE ref = 'demo-writer'`);
    raw.close();
    const vault = await service();
    const refused = await vault.httpCredential('demo-writer', 'http://127.0.0.1:8790/config/a').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CredentialUnavailableError);
    expect((refused as Error).message).toMatch(/does not authenticate/);
    expect(exposed(refused)).not.toContain(VALUE);
  });

  it('given a running gateway, when another process locks and unlocks the vault, then it follows: locked refuses, unlocked serves again', async () => {
    await withDemoWriter();
    const vault = await service();
    const seen: VaultState[] = [];
    vault.onChange((state) => seen.push(state));
    const other = openSqliteEventStore({ file: join(dataDir, 'events.db') });
    try {
      await lockVault({ ...context(), store: other }, 'incident 42');
      await eventually(() => (vault.state().locked ? true : undefined));
      expect(vault.state()).toMatchObject({ initialized: true, locked: true, reason: 'locked by operator:test: incident 42' });
      const refused = await vault.httpCredential('demo-writer', 'http://127.0.0.1:8790/config').catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(VaultLockedError);
      expect((refused as Error).message).toContain('incident 42');

      await unlockVault({ ...context(), store: other });
      await eventually(() => (vault.state().locked ? undefined : true));
      expect(await vault.httpCredential('demo-writer', 'http://127.0.0.1:8790/config')).toEqual({ headers: { Authorization: `Bearer ${VALUE}` }, secrets: [VALUE] });
      expect(seen.map((state) => state.locked)).toEqual([true, false]);
    } finally {
      await other.close();
    }
  });

  it('given a lock appended a moment ago, when a credential is asked for before the subscription sees it, then it is refused', async () => {
    await withDemoWriter();
    const vault = await service();
    await lockVault(context(), 'right now');
    await expect(vault.httpCredential('demo-writer', 'http://127.0.0.1:8790/config')).rejects.toBeInstanceOf(VaultLockedError);
  });

  it('given a credential stored again, when asked for, then the new version is used and the old row is gone', async () => {
    await withDemoWriter();
    const vault = await service();
    await storeCredential(context(), { ref: 'demo-writer', kind: 'bearer', bindings: ['127.0.0.1:8790'] }, 'second-value');
    expect(await vault.httpCredential('demo-writer', 'http://127.0.0.1:8790/payments')).toEqual({ headers: { Authorization: 'Bearer second-value' }, secrets: ['second-value'] });
    expect(vault.describe('demo-writer')).toMatchObject({ version: 2, bindings: ['127.0.0.1:8790'] });
    const raw = new DatabaseSync(vaultFilePath(dataDir), { readOnly: true });
    expect(raw.prepare('SELECT version FROM credentials').all()).toEqual([{ version: 2 }]);
    raw.close();
  });
});
