import { HttpDispatcher } from '@oncegate/dispatcher-http';
import { microservice, SERVICE_CONSUMERS } from '@oncegate/service-host/host';
import { dispatcherService, type DispatchChannel } from '@oncegate/service-host/dispatch/dispatchers';
import { DispatcherHttpController } from './dispatcher-http.controller';
import { DispatcherHttpModule } from './dispatcher-http.module';

/** The HTTP channel: its dispatcher service on the process's vault and prepared calls. */
export const httpChannel: DispatchChannel = {
  channel: 'http',
  async start({ host, vault, prepared, dispatcherId }) {
    const { store, tools, sealed, clock } = host;
    const http = new HttpDispatcher();
    const app = await microservice(host, DispatcherHttpModule.forRoot({ store, tools, sealed, http, vault, dispatcherId, clock, prepared }), SERVICE_CONSUMERS.dispatcherHttp);
    return { app, controller: app.get(DispatcherHttpController), close: () => http.close() };
  },
};

/** `oncegate serve dispatcher-http`. */
export const dispatcherHttpService = dispatcherService(httpChannel);
