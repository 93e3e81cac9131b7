export { dispatcherHttpService, httpChannel, HttpChannelDriver, httpDispatcher, httpKit } from './http-channel';
