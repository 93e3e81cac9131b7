import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

/** The run's PostgreSQL 15 server, shared by every test file that does not stop or restart its own. */
export interface SharedPostgres {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** The superuser `postgres`, trusted from 127.0.0.1 without a password; other users log in with theirs. */
  readonly user: 'postgres';
  /** Connection URL of the database `postgres` (or of `database`) as the superuser. */
  url(database?: string): string;
}

/** The run's Apache Kafka broker, shared by every test file that does not stop its own; topics are named per test. */
export interface SharedKafka {
  readonly brokers: string[];
  /** A topic prefix of the test's own, so that tests sharing the broker never read each other's messages. */
  topicPrefix(name: string): string;
}

async function ask<T>(what: 'postgres' | 'kafka'): Promise<T> {
  const endpoint = inject('sharedServers');
  if (endpoint === undefined) throw new Error('no shared servers: the tests run them from tools/vitest-servers.ts, vitest\'s global set-up');
  const response = await fetch(`${endpoint}/${what}`);
  if (!response.ok) throw new Error(`the shared ${what} did not start: ${await response.text()}`);
  return (await response.json()) as T;
}

let postgres: Promise<SharedPostgres> | undefined;
let kafka: Promise<SharedKafka> | undefined;

/** The run's PostgreSQL server (started on first use by the global set-up). */
export function sharedPostgres(): Promise<SharedPostgres> {
  postgres ??= ask<{ port: number }>('postgres').then(({ port }) => ({
    host: '127.0.0.1' as const,
    port,
    user: 'postgres' as const,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
  }));
  return postgres;
}

/** The run's Kafka broker (started on first use by the global set-up). */
export function sharedKafka(): Promise<SharedKafka> {
  kafka ??= ask<{ brokers: string[] }>('kafka').then(({ brokers }) => ({
    brokers,
    topicPrefix: (name: string) => `${name}-${randomBytes(4).toString('hex')}`,
  }));
  return kafka;
}
