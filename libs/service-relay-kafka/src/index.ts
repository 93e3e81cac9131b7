export { busClient, BusProducer } from './bus-client';
export { BusDecisions, type BusDecision, type DecisionRefusal, type DecisionReply } from './bus-decisions';
export { decisionSigningBytes, decisionToSign, signDecision } from './decision-signature';
export { cloudEventMessage, readCloudEvent, topicOf, type BusMessage, type ReceivedCloudEvent } from './cloud-events';
export { EventRelay, RELAY_CONSUMER, type RelayProgress } from './event-relay';
export { hostRelay, relayKafkaService, relaySummary, type HostedRelay } from './relay-service';
