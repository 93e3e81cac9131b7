import { preparedRequest, renderHttpRequest, HttpDispatcher, type HttpCredential, type HttpCredentialBuffer } from '@oncegate/channel-http';
import type { ToolContract } from '@oncegate/contracts';
import {
  defineHostChannel,
  hostingOf,
  type HostAttempt,
  type HostChannelDriver,
  type KitDispatcher,
  type StandaloneDependencies,
  vaultRefusal,
} from '@oncegate/dispatcher-kit/host';
import type { DispatchRefusal, SendOutcome, StatusFinding } from '@oncegate/dispatcher-kit';
import { activeTraceparent } from '@oncegate/execution-journal';
import type { VaultService } from '@oncegate/host-vault';

/**
 * Sends HTTP tools: the outcome is observed or unknown from what the socket saw; a conditional write's status query
 * is its recovery evidence. The credential comes from the vault at send time, for the URL actually rendered, and
 * only if it is bound to it.
 *
 * Each execution's request is rendered once (`PreparedCalls`, shared with authorization in this process): the
 * preflight admits the credential for that rendering, the attempt decrypts it once and sends that same rendering.
 */
export class HttpChannelDriver implements HostChannelDriver {
  constructor(
    private readonly http: HttpDispatcher,
    private readonly vault: VaultService,
  ) {}

  /**
   * The vault is unlocked and the credential is there and bound to the URL this attempt goes to (the prepared
   * rendering). Nothing is decrypted here: the attempt decrypts, once, just before sending.
   */
  async preflight({ call }: Omit<HostAttempt, 'secret'>): Promise<DispatchRefusal | undefined> {
    const ref = call.tool.credentialRef;
    // A request that cannot be rendered is reported by the attempt, which sends nothing.
    const prepared = preparedRequest(call);
    if (ref !== null && 'request' in prepared) {
      try {
        // Catching up with the vault's journal found it unlocked; the binding is checked again only if it moved.
        call.binding = await this.vault.admitHttp(ref, prepared.request.url, call.binding);
        return undefined;
      } catch (error) {
        return vaultRefusal(error);
      }
    }
    // Without a credential (a tool that needs none), a locked vault still stops the dispatch.
    const vault = await this.vault.refresh();
    return vault.locked ? { basis: 'vault_locked', reason: `the vault is locked: ${vault.reason}` } : undefined;
  }

  /**
   * The credential for the URL this request renders to, from the vault, or why there is none. Nothing when the
   * tool names no credential, or when its URL cannot be rendered (the send then reports that, sending nothing).
   */
  private async credentialFor(
    tool: ToolContract,
    args: Readonly<Record<string, unknown>>,
    executionId: string,
  ): Promise<{ credential?: HttpCredential } | { refusal: DispatchRefusal }> {
    if (tool.credentialRef === null) return {};
    let url: string;
    try {
      url = renderHttpRequest(tool, args as Record<string, unknown>, executionId).url;
    } catch {
      return {};
    }
    try {
      return { credential: await this.vault.httpCredential(tool.credentialRef, url) };
    } catch (error) {
      return { refusal: vaultRefusal(error) };
    }
  }

  async send({ executionId, tool, args, call }: HostAttempt): Promise<SendOutcome> {
    const prepared = preparedRequest(call);
    if ('error' in prepared) return { kind: 'not_sent', reason: `could not render the request: ${prepared.error.message}` };
    const rendered = prepared.request;
    let credential: HttpCredentialBuffer | undefined;
    if (tool.credentialRef !== null) {
      try {
        // The one decryption of this attempt, for the URL the binding was checked against.
        credential = await this.vault.httpCredentialBuffer(tool.credentialRef, rendered.url, call.binding);
      } catch (error) {
        return { kind: 'not_sent', reason: vaultRefusal(error).reason };
      }
    }
    let result;
    try {
      const traceparent = activeTraceparent();
      result = await this.http.send({ executionId, tool, arguments: args as Record<string, unknown>, rendered, ...(credential ? { credential } : {}), ...(traceparent ? { traceparent } : {}) });
    } finally {
      credential?.value.fill(0);
      for (const secret of credential?.secrets ?? []) secret.fill(0);
    }
    switch (result.kind) {
      case 'unknown':
        return { kind: 'unknown', reason: result.reason };
      case 'not_sent':
        return { kind: 'not_sent', reason: result.reason };
      case 'response': {
        const text = isText(result.contentType);
        return {
          kind: 'observed',
          outcome: result.outcome,
          status: result.status,
          contentType: result.contentType,
          body: Buffer.from(result.body).toString(text ? 'utf8' : 'base64'),
          encoding: text ? 'utf8' : 'base64',
          truncated: result.truncated,
        };
      }
    }
  }

  /** The contract's status query: does the precondition of the write still hold at the target? */
  async queryStatus({ executionId, tool, args }: HostAttempt): Promise<StatusFinding> {
    const query = tool.statusQuery;
    if (query == null) return { preconditionHolds: false, observedStatus: 'no status query in the contract' };
    const statusTool: ToolContract = {
      ...tool,
      request: { kind: 'http', method: 'GET', url: query.http.url, headers: query.http.headers, body: undefined, idempotencyHeader: null },
    };
    const found = await this.credentialFor(statusTool, args, executionId);
    if ('refusal' in found) return { preconditionHolds: false, observedStatus: `not asked: ${found.refusal.reason}`.slice(0, 200) };
    const { credential } = found;
    const result = await this.http.send({ executionId, tool: statusTool, arguments: args as Record<string, unknown>, ...(credential ? { credential } : {}) });
    if (result.kind !== 'response' || result.outcome !== 'succeeded') {
      return { preconditionHolds: false, observedStatus: result.kind === 'response' ? `status ${result.status}` : result.kind };
    }
    let observed: unknown;
    try {
      observed = jsonPointer(JSON.parse(Buffer.from(result.body).toString('utf8')), query.precondition.pointer);
    } catch {
      return { preconditionHolds: false, observedStatus: 'the status answer is not JSON' };
    }
    const expected = query.precondition.equals.kind === 'literal' ? query.precondition.equals.value : args[query.precondition.equals.argument];
    return {
      preconditionHolds: JSON.stringify(observed) === JSON.stringify(expected),
      observedStatus: `${query.precondition.pointer}=${JSON.stringify(observed) ?? 'absent'}`.slice(0, 200),
    };
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

/** RFC 6901: the value at `pointer` in `document`, or `undefined`. */
function jsonPointer(document: unknown, pointer: string): unknown {
  if (pointer === '') return document;
  let current: unknown = document;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function isText(contentType: string | null): boolean {
  return contentType === null || /^(text\/|application\/([a-z0-9.+-]*\+)?(json|xml|x-www-form-urlencoded))/i.test(contentType);
}

/** The HTTP channel on the dispatcher kit. */
export const httpKit = defineHostChannel({ name: 'http', open: ({ vault }) => new HttpChannelDriver(new HttpDispatcher(), vault) });

/** The HTTP channel's dispatcher among the dispatchers of a process. */
export const httpChannel = hostingOf(httpKit).channel;

/** `oncegate serve dispatcher-http`. */
export const dispatcherHttpService = hostingOf(httpKit).service;

/** The HTTP dispatcher on its own, outside a Nest application (the services' integration tests drive it by hand). */
export function httpDispatcher(deps: StandaloneDependencies & { readonly http: HttpDispatcher }): KitDispatcher {
  return hostingOf(httpKit).standalone(new HttpChannelDriver(deps.http, deps.vault), deps);
}
