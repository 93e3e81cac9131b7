// What waits for people and what they decided: the approval queue, the review queue of held executions, their gauges,
// and the journal of agent runs and their session grants.
export { decide, isApprovalRefusal, isPending, MAX_APPROVAL_REASON_LENGTH, pending, show, targetOf, type ApprovalDecision, type ApprovalView, type PendingApproval } from './approval-queue';
export { queueGauges, type QueueGaugesHost } from './queue-gauges';
export { held, isReviewRefusal, resolutionOutcome, resolveReview, reviewViewOf, showReview } from './review-queue';
export { DECLARED_RUN, endRun, executionsOfRun, grantedTools, grantRun, listRuns, readRun, RunNotFoundError, runOfCall, RunViews, sessionRunId, startRun, type RunGrantedData, type RunView } from './run-journal';
