export { dispatcherSshService, sshChannel, SshChannelDriver, sshDispatcher, sshKit } from './ssh-channel';
