import { approverStream, STREAM_CATEGORIES } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { PrincipalDirectory, type PrincipalKind } from './principal-directory';

/**
 * Approvers are people who decide approvals over the HTTP API. Their `oga_` tokens live on `approver-<name>`
 * streams and authenticate as `approver:<name>`; they are never agent tokens, so they never call tools, and an
 * agent token never decides an approval.
 */
export const APPROVER_PRINCIPALS: PrincipalKind = {
  label: 'approver',
  stream: approverStream,
  streamPrefix: `${STREAM_CATEGORIES.approver}-`,
  tokenPrefix: 'oga_',
  events: { issued: 'ApproverTokenIssued', revoked: 'ApproverTokenRevoked' },
};

export class ApproverDirectory extends PrincipalDirectory {
  constructor(store: EventStore) {
    super(store, APPROVER_PRINCIPALS);
  }
}
