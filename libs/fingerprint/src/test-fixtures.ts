// Shared by this library's specs only; not exported from the index.
import { keyRingFromConfig, type KeyRing, type KeyRingConfig, type OperationRecordInput } from './index';

/** 32-byte test secrets, as hex; distinct so a test can tell the keys apart. */
export const SECRETS = {
  old: '6f6c642d66696e6765727072696e742d6b65792d666f722d74657374732d2d31',
  new: '6e65772d66696e6765727072696e742d6b65792d666f722d74657374732d2d32',
  next: '6e6578742d66696e6765727072696e742d6b65792d666f722d74657374732d33',
  args: '617267756d656e742d6b65792d666f722d74657374732d2d2d2d2d2d2d2d2d31',
  otherArgs: '6f746865722d617267756d656e742d6b65792d666f722d74657374732d2d2d32',
} as const;

export function ringConfig(overrides: Partial<KeyRingConfig> = {}): KeyRingConfig {
  return {
    current: 'fp-new',
    keys: [
      { id: 'fp-new', secret: SECRETS.new, state: 'active' },
      { id: 'fp-old', secret: SECRETS.old, state: 'verify_only' },
    ],
    argumentKey: { id: 'args-1', secret: SECRETS.args },
    ...overrides,
  };
}

export function testRing(overrides: Partial<KeyRingConfig> = {}): KeyRing {
  return keyRingFromConfig(ringConfig(overrides));
}

/** The call of docs/design.md section 2. */
export function deployCall(overrides: Partial<OperationRecordInput> = {}): OperationRecordInput {
  return {
    actor: 'agent:deploy-bot',
    tool: 'deploy_release',
    channel: 'http',
    target: 'deploy-api.internal.example/releases',
    credentialRef: 'deploy-service',
    method: 'POST',
    arguments: { region: 'us-east-1', service: 'catalog', version: '2026.07.22' },
    intentScope: 'run:5f8097',
    ...overrides,
  };
}

/** The error `action` throws; fails the test when it throws nothing. */
export function catchError(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error, none was thrown');
}
