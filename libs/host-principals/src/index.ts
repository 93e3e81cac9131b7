// The agents and approvers the gateway knows, their tokens and the approvers' signing keys, each kept in the journal.
export { AgentDirectory } from './agent-directory';
export { ApproverDirectory, ApproverKeyError, approverPublicKey } from './approver-directory';
export { PrincipalDirectory, PrincipalNameError, PrincipalTokenError, type TokenRefusal, type TokenVerdict } from './principal-directory';
