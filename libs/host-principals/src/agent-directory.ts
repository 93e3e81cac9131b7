import { agentStream, STREAM_CATEGORIES } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { PrincipalDirectory, PrincipalNameError, type PrincipalKind, type PrincipalRecord } from './principal-directory';

/** Agents call tools over MCP with `ogt_` tokens on `agent-<name>` streams; the actor is `agent:<name>`. */
export const AGENT_PRINCIPALS: PrincipalKind = {
  label: 'agent',
  stream: agentStream,
  streamPrefix: `${STREAM_CATEGORIES.agent}-`,
  tokenPrefix: 'ogt_',
  events: { issued: 'AgentTokenIssued', revoked: 'AgentTokenRevoked' },
};

export type AgentRecord = PrincipalRecord;

/** An invalid agent name (a `PrincipalNameError` whose label is `agent`). */
export const AgentNameError = PrincipalNameError;
export type AgentNameError = PrincipalNameError;

/** API tokens of agents (docs/design.md section 3). */
export class AgentDirectory extends PrincipalDirectory {
  constructor(store: EventStore) {
    super(store, AGENT_PRINCIPALS);
  }
}
