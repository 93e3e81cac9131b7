export { DispatcherHttpController } from './dispatcher-http.controller';
export { DispatcherHttpModule, type DispatcherHttpDependencies } from './dispatcher-http.module';
export { dispatcherHttpService, httpChannel } from './http-channel';
