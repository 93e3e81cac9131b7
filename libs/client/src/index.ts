export { lostOnTheWay, OncegateClient, type CallOptions, type OncegateClientOptions } from './oncegate-client.js';
