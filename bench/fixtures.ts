/** A payload and metadata shaped like an ExecutionAccepted event, so the benchmarks' sizes are realistic. */
export const ACCEPTED_PAYLOAD = {
  schemaVersion: 1,
  record: {
    actor: 'agent:deploy-bot',
    tool: 'deploy_release',
    channel: 'http',
    target: 'deploy-api.internal.example/releases',
    credential_ref: 'deploy-service',
    method: 'POST',
    arguments: { region: 'us-east-1', service: 'catalog', version: '2026.07.22' },
    intent_scope: 'run:5f8097',
  },
  fingerprint: 'hmac-sha256:k1:6f1d0c3b9a7e5d4c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6b5a',
  operationClass: 'irreversible',
  windowEndsAt: '2026-11-30T07:00:00.000Z',
};

export const ACCEPTED_METADATA = {
  causationId: '01938a6e-7c3e-7a4b-9d2f-5e6a7b8c9d0e',
  correlation: { jsonRpcId: 42, sessionId: 'f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d', transport: 'streamable-http' },
  actor: 'agent:deploy-bot',
  schemaVersion: 1,
};
