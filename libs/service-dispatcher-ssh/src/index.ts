export { DispatcherSshController } from './dispatcher-ssh.controller';
export { DispatcherSshModule, type DispatcherSshDependencies } from './dispatcher-ssh.module';
export { dispatcherSshService, sshChannel } from './ssh-channel';
