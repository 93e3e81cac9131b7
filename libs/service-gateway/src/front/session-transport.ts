import {
  WebStandardStreamableHTTPServerTransport,
  type WebStandardStreamableHTTPServerTransportOptions,
} from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { answeredId } from './delivery-evidence';

/**
 * The SDK's Streamable HTTP transport, reporting when the response to a request has been sent: until then the
 * request's id is taken on its session (the SDK maps responses to streams by id alone).
 */
export class SessionTransport extends WebStandardStreamableHTTPServerTransport {
  constructor(
    options: WebStandardStreamableHTTPServerTransportOptions,
    private readonly responseSent: (requestId: RequestId) => void,
  ) {
    super(options);
  }

  override async send(message: JSONRPCMessage, options?: { relatedRequestId?: RequestId }): Promise<void> {
    try {
      await super.send(message, options);
    } finally {
      const answered = answeredId(message);
      if (answered !== undefined) this.responseSent(answered);
    }
  }
}
