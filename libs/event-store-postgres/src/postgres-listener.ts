import { Client, type ClientConfig, type Notification, type PoolConfig } from 'pg';
import { CommitListener, type CommitReport } from '@oncegate/event-store';

/**
 * A listening connection of its own: LISTENs on `channels` and hands every notification to `heard`. It is made by
 * `ensure()`, lost when it fails or ends (the next `ensure()` makes another) and ended by `close()`; `report` is told
 * when it connects or is lost (nothing may have been heard meanwhile).
 */
export class PostgresListener extends CommitListener<Client> {
  constructor(
    private readonly config: ClientConfig,
    private readonly channels: readonly string[],
    private readonly heard: (message: Notification) => void,
    report: CommitReport = () => undefined,
  ) {
    super(report);
  }

  protected async open(): Promise<Client | undefined> {
    const client = new Client(this.config);
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', this.heard);
    try {
      await client.connect();
      for (const channel of this.channels) await client.query(`LISTEN ${channel}`);
    } catch {
      client.end().catch(() => undefined);
      return undefined;
    }
    return client;
  }

  protected async end(client: Client): Promise<void> {
    await client.end().catch(() => undefined);
  }
}

/**
 * A listening connection's settings from a pool's, named `<application>-listener`: its LISTENs are given only as long
 * as connecting, since a server that never answered them would otherwise hold the connection being made (and with it
 * whatever waits for it, a close included) for good.
 */
export function listenerConfig(config: PoolConfig, application: string): ClientConfig {
  const { max: _max, idleTimeoutMillis: _idle, ...clientConfig } = config;
  return {
    ...clientConfig,
    application_name: `${config.application_name ?? application}-listener`,
    query_timeout: clientConfig.query_timeout ?? config.connectionTimeoutMillis,
  };
}
