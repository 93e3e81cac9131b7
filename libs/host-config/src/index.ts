// The gateway's configuration: oncegate.yaml read, checked against its schema and the environment, and the
// checks a schema cannot make (loopback rules, store URLs, Kafka's TLS and SASL files).
export { applyEnvironment, GatewayConfigError, logLevelsUpTo, parseGatewayConfig, unauthenticatedAgentProblem, type GatewayConfig, type KafkaConfig, type KafkaDecisionsConfig, type KafkaSaslConfig, type KafkaSaslMechanism, type KafkaTlsConfig, type OAuthConfig, type PolicyDecision, type PolicyRule, type SecretSource, type StoreConfig } from './gateway-config';
export { passwordOf } from './kafka-security';
export { loadGatewayConfig } from './load-config';
export { isLoopbackHost, LOOPBACK_HOSTS } from './loopback';
export { redactedStoreUrl, withoutStorePassword } from './store-url';
export { channelOptionsIssue, type ChannelOptionsEntry, type FilePosition, type OptionPosition } from './channel-options';
