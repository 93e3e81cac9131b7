/** Injection tokens shared by the services (explicit tokens: the services run without emitted type metadata). */
export const CLOCK = Symbol('oncegate:clock');
export const TOOLS = Symbol('oncegate:tools');
export const SEALED_STORE = Symbol('oncegate:sealed-store');
export const POLICY = Symbol('oncegate:policy');
export const VAULT = Symbol('oncegate:vault');
export const APPROVAL_TIMEOUT_MS = Symbol('oncegate:approval-timeout-ms');
export const DELIVERY_TRACKER = Symbol('oncegate:delivery-tracker');
export const HTTP_DISPATCHER = Symbol('oncegate:http-dispatcher');
export const DISPATCHER_ID = Symbol('oncegate:dispatcher-id');
export const SSH_DISPATCHER = Symbol('oncegate:ssh-dispatcher');
export const PREPARED_CALLS = Symbol('oncegate:prepared-calls');
