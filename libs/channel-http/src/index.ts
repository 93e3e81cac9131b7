export { HttpDispatcher, DEFAULT_USER_AGENT } from './http-dispatcher';
export type { HttpDispatcherOptions } from './http-dispatcher';
export { renderHttpRequest, HttpRenderError } from './render-http-request';
export { preparedRequest, type PreparedHttpCall, type PreparedRequest } from './prepared-request';
export type { RenderedHttpRequest } from './render-http-request';
export { classifyStatus } from './classify-status';
export type { StatusOutcome } from './classify-status';
export type {
  HttpAttempt,
  HttpAttemptResult,
  HttpCredential,
  HttpCredentialBuffer,
  HttpNotSentResult,
  HttpResponseResult,
  HttpUnknownResult,
} from './http-attempt';
