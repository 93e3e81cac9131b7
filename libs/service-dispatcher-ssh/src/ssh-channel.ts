import { SshDispatcher } from '@oncegate/dispatcher-ssh';
import { microservice, SERVICE_CONSUMERS } from '@oncegate/service-host/host';
import { dispatcherService, type DispatchChannel } from '@oncegate/service-host/dispatch/dispatchers';
import { DispatcherSshController } from './dispatcher-ssh.controller';
import { DispatcherSshModule } from './dispatcher-ssh.module';

/** The SSH channel: its dispatcher service on the process's vault. */
export const sshChannel: DispatchChannel = {
  channel: 'ssh',
  async start({ host, vault, dispatcherId }) {
    const { store, tools, sealed, clock } = host;
    const ssh = new SshDispatcher();
    const app = await microservice(host, DispatcherSshModule.forRoot({ store, tools, sealed, ssh, vault, dispatcherId, clock }), SERVICE_CONSUMERS.dispatcherSsh);
    return { app, controller: app.get(DispatcherSshController), close: () => ssh.close() };
  },
};

/** `oncegate serve dispatcher-ssh`. */
export const dispatcherSshService = dispatcherService(sshChannel);
