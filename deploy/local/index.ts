export { LOCAL_LAYOUT, startLocalDeployment, startService } from './local-deployment';
export type { LocalDeployment, LocalDeploymentOptions, LocalLayout, LocalService, ServiceOptions, ServiceProcess } from './local-deployment';
export { startPostgres } from './postgres';
export type { PostgresHandle, StartPostgresOptions } from './postgres';
export { startKafka, ensureKafkaJars } from './kafka';
export type { KafkaHandle, StartKafkaOptions } from './kafka';
export type { LocalServer } from './local-server';
export { freePort } from './free-port';
