import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { PARKED_EVENT_TYPES, readParked, type EventParkedData } from '@oncegate/nest-event-store';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the CLI runs as its own process, as the end-to-end suites run it
import { oncegate, type GatewayFolder } from '../../../../../test/support/gateway-process';

describe('oncegate parked (the real CLI process on a SQLite data folder)', () => {
  let folder: GatewayFolder;
  let store: EventStore;
  const run = (...args: string[]) => oncegate(folder, args);

  /** What the authorization service appends when it parks an event. */
  async function parked(data: Partial<EventParkedData>): Promise<string> {
    const eventId = crypto.randomUUID();
    const full: EventParkedData = {
      consumer: 'authorization',
      position: 7,
      eventId: crypto.randomUUID(),
      streamId: 'execution-ex_01J3Z6Y8QK4W5X2V7N9M0P1R2S',
      revision: 0,
      type: 'ExecutionAccepted',
      error: 'Error: the vault file cannot be read',
      attempts: 5,
      behind: null,
      ...data,
    };
    await store.appendToStream('parked-authorization', [{ id: eventId, type: PARKED_EVENT_TYPES.parked, data: full, metadata: { actor: 'service:authorization' } }]);
    return eventId;
  }

  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-parked-cli-'));
    const dataDir = join(dir, 'data');
    const configFile = join(dir, 'oncegate.yaml');
    writeFileSync(join(dir, 'tools.yaml'), 'tools: []\n');
    writeFileSync(configFile, `data_dir: ${dataDir}\ncontracts: ${join(dir, 'tools.yaml')}\n`);
    mkdirSync(dataDir, { recursive: true });
    folder = { dir, dataDir, journal: dataDir, configFile, port: 0, url: '', dispose: () => rmSync(dir, { recursive: true, force: true }) };
    store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
  });

  afterAll(async () => {
    await store.close();
    folder.dispose();
  });

  it('given nothing parked, when listed, then it says so', async () => {
    expect(await run('parked', 'list')).toMatchObject({ code: 0, stdout: 'no event is parked\n' });
  });

  it('given a parked event and one waiting behind it, when listed, shown and replayed, then the list names both and why, only the first can be replayed, and the request is recorded', async () => {
    const head = await parked({});
    const behind = await parked({ position: 9, revision: 1, type: 'ApprovalGranted', error: 'waits', attempts: 0, behind: head });

    const listed = await run('parked', 'list');
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(`${head}\tauthorization\tExecutionAccepted execution-ex_01J3Z6Y8QK4W5X2V7N9M0P1R2S@0\tposition 7`);
    expect(lines[0]).toContain('the vault file cannot be read');
    expect(lines[1]).toContain(`waits behind ${head}`);
    const json = JSON.parse((await run('parked', 'list', '--consumer', 'authorization', '--json')).stdout) as Array<{ parkedId: string }>;
    expect(json.map((item) => item.parkedId)).toEqual([head, behind]);
    expect(JSON.parse((await run('parked', 'show', head)).stdout)).toMatchObject({ parkedId: head, attempts: 5, behind: null });

    const refused = await run('parked', 'replay', behind, '--consumer', 'authorization');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`waits behind ${head}`);
    const replayed = await run('parked', 'replay', head, '--consumer', 'authorization', '--by', 'user:alice');
    expect(replayed).toMatchObject({ code: 0 });
    expect(replayed.stdout).toContain(`replay asked of authorization for ${head}`);
    expect((await readParked(store, 'authorization')).open.map((item) => item.replayRequested)).toEqual([true, false]);
  });

  it('given mistakes on the command line, when run, then each is a usage error naming the fix', async () => {
    expect(await run('parked', 'list', '--consumer', 'sealer')).toMatchObject({ code: 2 });
    expect((await run('parked', 'replay', '--all')).stderr).toContain("required option '--consumer <service>' not specified");
    expect((await run('parked', 'replay', 'x', '--all', '--consumer', 'authorization')).stderr).toContain('not both');
    expect(await run('parked', 'show', 'no-such-id')).toMatchObject({ code: 1 });
  });
});
