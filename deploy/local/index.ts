export { LOCAL_LAYOUT, startLocalDeployment, startService } from './local-deployment';
export type { LocalDeployment, LocalDeploymentOptions, LocalLayout, LocalService, ServiceOptions, ServiceProcess } from './local-deployment';
export { startPostgres } from './postgres';
export type { PostgresHandle, StartPostgresOptions } from './postgres';
