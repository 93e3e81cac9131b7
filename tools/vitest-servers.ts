import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';
import { startKafka, startPostgres, type KafkaHandle, type PostgresHandle } from '@oncegate/deploy-local';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where a test asks for the run's shared servers (test/support/shared-servers.ts). */
    sharedServers: string;
  }
}

/**
 * vitest global set-up: one PostgreSQL server and one Kafka broker for the whole run, started the first time a test
 * asks for one and shared by every file after it (each test takes a database, a schema or a topic prefix of its own).
 * A test file runs in a worker process of its own, so the servers are owned here, by the process that outlives
 * them all: the workers ask for them over a loopback HTTP endpoint, and nothing starts for a run that never asks.
 * Tests that stop, restart or starve their server start one of their own (`startPostgres`, `startKafka`).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let postgres: Promise<PostgresHandle> | undefined;
  let kafka: Promise<KafkaHandle> | undefined;
  const endpoint: Server = createServer((request, response) => {
    const answer = async () => {
      switch (request.url) {
        case '/postgres': {
          // Password logins for users other than postgres: the SQL dispatcher's tests log in with a credential.
          postgres ??= startPostgres({ passwordLogins: true, maxConnections: 600 });
          const server = await postgres;
          return { host: server.host, port: server.port };
        }
        case '/kafka': {
          kafka ??= startKafka();
          const broker = await kafka;
          return { brokers: broker.brokers, port: broker.port };
        }
        default:
          throw new Error(`no shared server at ${request.url}: ask for /postgres or /kafka`);
      }
    };
    answer().then(
      (body) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end((error as Error).message),
    );
  });
  // A broker's first start copies nothing (its jars are fetched before the tests) but takes a while on a busy machine.
  endpoint.requestTimeout = 0;
  await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
  project.provide('sharedServers', `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`);
  return async () => {
    endpoint.close();
    const started = await Promise.allSettled([postgres, kafka].filter((server) => server !== undefined));
    await Promise.allSettled(started.flatMap((result) => (result.status === 'fulfilled' ? [result.value.stop()] : [])));
  };
}
