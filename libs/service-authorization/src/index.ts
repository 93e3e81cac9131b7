export { AuthorizationController } from './authorization.controller';
export { AuthorizationModule, type AuthorizationDependencies } from './authorization.module';
export { authorizationService, hostAuthorization, policyOf } from './authorization-service';
export { Policy } from './policy';
