import type { ToolContract } from '@oncegate/contracts';
import { renderHttpRequest, type RenderedHttpRequest } from './render-http-request';

/** One execution's call as a process prepared it (its contract and opened arguments), whatever the channel. */
export interface PreparedHttpCall {
  readonly executionId: string;
  readonly tool: ToolContract;
  readonly args: Readonly<Record<string, unknown>>;
}

/** The request an HTTP tool's call sends, or why it cannot be built. */
export type PreparedRequest = { readonly request: RenderedHttpRequest } | { readonly error: Error };

const RENDERED = new WeakMap<PreparedHttpCall, PreparedRequest>();

/**
 * The request of a prepared call, rendered once per call object: authorization checks the credential's binding
 * against its URL, and every attempt of the execution sends that same rendering. The host's prepared calls keep
 * one object per execution, so this is once per execution in a process; the host itself renders nothing.
 */
export function preparedRequest(call: PreparedHttpCall): PreparedRequest {
  let rendered = RENDERED.get(call);
  if (rendered === undefined) {
    try {
      rendered = { request: renderHttpRequest(call.tool, call.args, call.executionId) };
    } catch (error) {
      rendered = { error: error instanceof Error ? error : new Error(String(error)) };
    }
    RENDERED.set(call, rendered);
  }
  return rendered;
}
