import type { INestMicroservice } from '@nestjs/common';
import type { ToolContract } from '@oncegate/contracts';
import { GatewayConfigError, type GatewayConfig } from '@oncegate/host-config';
import type { VaultService } from '@oncegate/host-vault';
import { loadTools, microservice, PreparedCalls, SERVICE_CONSUMERS, type Host, type ServiceDefinition } from '@oncegate/service-host';
import { AuthorizationController } from './authorization.controller';
import { AuthorizationModule } from './authorization.module';
import { Policy } from './policy';

/** The configured policy; a rule naming a tool the contracts do not declare is a configuration error. */
export function policyOf(config: GatewayConfig, tools: ReadonlyMap<string, ToolContract>): Policy {
  const policy = new Policy(config.policy);
  const unknown = policy.unknownTools(new Set(tools.keys()));
  if (unknown.length > 0) {
    throw new GatewayConfigError(
      unknown.map(({ source, tool, line, column }) => ({
        file: config.source,
        path: source.endsWith(']') ? `${source}.tools` : source,
        line,
        column,
        reason: `no tool named '${tool}' in ${config.contractsFile}`,
      })),
    );
  }
  return policy;
}

/** Authorization as a Nest microservice of this process, on the vault and prepared calls it shares. */
export async function hostAuthorization(host: Host, vault: VaultService, prepared: PreparedCalls): Promise<INestMicroservice> {
  const { store, tools, sealed, clock, config } = host;
  return microservice(
    host,
    AuthorizationModule.forRoot({ store, policy: policyOf(config, tools), vault, tools, sealed, approvalTimeoutMs: config.approvalTimeoutMs, clock, prepared }),
    SERVICE_CONSUMERS.authorization,
    // Runs are granted on their own streams, and a closed MCP session ends its run.
    ['execution-', 'run-', 'session-'],
  );
}

/** `oncegate serve authorization`. */
export const authorizationService: ServiceDefinition = {
  // It renders each call's request from its arguments, sealed by the gateway.
  sealedBlobs: { opens: ['arguments'] },
  name: 'authorization',
  check: (config) => void policyOf(config, loadTools(config)),
  async serve(host, together) {
    const app = await hostAuthorization(host, await together.vault(), together.prepared);
    const removeStep = together.inlineSteps.add(app.get(AuthorizationController).inlineStep());
    return {
      close: async () => {
        removeStep();
        await app.close();
      },
    };
  },
};
