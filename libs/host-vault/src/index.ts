// What the gateway opens under the master key: credentials from the vault for a dispatcher, and its own key files.
export { KeyFileError, loadGatewayKeys, type GatewayKeys } from './key-files';
export { noVault, VaultService, type BindingTarget, type HttpBindingChecked, type VaultState } from './vault-service';
