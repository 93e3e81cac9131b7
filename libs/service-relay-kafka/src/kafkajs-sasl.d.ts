/**
 * kafkajs 2.2.4's own SASL authenticators (node_modules/kafkajs/src/broker/saslAuthenticator/), which its types do not
 * export: the relay wraps them so that the password is fetched for each broker at connect time. package-lock.json holds
 * 2.2.4, kafkajs's last release; check these paths if that ever changes (the relay's integration tests use all three).
 */
type KafkajsSaslProvider = (sasl: { username: string; password: string }) => (args: import('kafkajs').AuthenticationProviderArgs) => import('kafkajs').Authenticator;

declare module 'kafkajs/src/broker/saslAuthenticator/plain.js' {
  const provider: KafkajsSaslProvider;
  export default provider;
}

declare module 'kafkajs/src/broker/saslAuthenticator/scram256.js' {
  const provider: KafkajsSaslProvider;
  export default provider;
}

declare module 'kafkajs/src/broker/saslAuthenticator/scram512.js' {
  const provider: KafkajsSaslProvider;
  export default provider;
}
