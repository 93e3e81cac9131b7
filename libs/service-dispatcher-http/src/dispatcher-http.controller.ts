import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { ExecutionState } from '@oncegate/domain';
import type { ToolContract } from '@oncegate/contracts';
import { renderHttpRequest, type HttpCredential, type HttpCredentialBuffer, type HttpDispatcher } from '@oncegate/dispatcher-http';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { EVENT_STORE } from '@oncegate/nest-event-store';
import { activeTraceparent, type Clock } from '@oncegate/execution-journal';
import type { SealedStore } from '@oncegate/sealed-store';
import type { VaultService } from '@oncegate/service-host/vault/vault-service';
import { ChannelDispatcher, notSent, type AttemptRecord, type DispatchRefusal } from '@oncegate/service-host/dispatch/channel-dispatcher';
import { vaultRefusal } from '@oncegate/service-host/dispatch/vault-refusal';
import { PreparedCalls, type PreparedCall } from '@oncegate/service-host/prepared-calls';
import { CLOCK, DISPATCHER_ID, HTTP_DISPATCHER, PREPARED_CALLS, SEALED_STORE, TOOLS, VAULT } from '@oncegate/service-host/tokens';

/**
 * Sends HTTP tools: `Dispatched` is durable before the request leaves; the outcome is recorded as observed or
 * unknown from what the socket saw; a conditional write's status query is its recovery evidence. The credential
 * comes from the vault at send time, for the URL actually rendered, and only if it is bound to it.
 *
 * Each execution's request is rendered once (`PreparedCalls`, shared with authorization in this process): the
 * preflight admits the credential for that rendering, the attempt decrypts it once and sends that same rendering.
 */
@Controller()
export class DispatcherHttpController extends ChannelDispatcher {
  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(TOOLS) tools: ReadonlyMap<string, ToolContract>,
    @Inject(SEALED_STORE) sealed: SealedStore,
    @Inject(HTTP_DISPATCHER) private readonly http: HttpDispatcher,
    @Inject(VAULT) private readonly vault: VaultService,
    @Inject(DISPATCHER_ID) dispatcherId: string,
    @Inject(CLOCK) clock: Clock,
    @Inject(PREPARED_CALLS) prepared: PreparedCalls = new PreparedCalls(sealed),
  ) {
    super('http', store, tools, sealed, dispatcherId, clock, prepared);
  }

  @EventPattern('StatusQueried')
  onStatusQueried(@Payload() event: RecordedEvent): Promise<void> {
    return this.recover(event);
  }

  /**
   * The vault is unlocked and the credential is there and bound to the URL this attempt goes to (the prepared
   * rendering). Nothing is decrypted here: the attempt decrypts, once, just before sending.
   */
  protected override async preflight(_state: ExecutionState, call: PreparedCall): Promise<DispatchRefusal | undefined> {
    const ref = call.tool.credentialRef;
    // A request that cannot be rendered is reported by the attempt, which sends nothing.
    if (ref !== null && call.http !== undefined && 'request' in call.http) {
      try {
        // Catching up with the vault's journal found it unlocked; the binding is checked again only if it moved.
        call.binding = await this.vault.admitHttp(ref, call.http.request.url, call.binding);
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
    args: Record<string, unknown>,
    executionId: string,
  ): Promise<{ credential?: HttpCredential } | { refusal: DispatchRefusal }> {
    if (tool.credentialRef === null) return {};
    let url: string;
    try {
      url = renderHttpRequest(tool, args, executionId).url;
    } catch {
      return {};
    }
    try {
      return { credential: await this.vault.httpCredential(tool.credentialRef, url) };
    } catch (error) {
      return { refusal: vaultRefusal(error) };
    }
  }

  protected async attempt(state: ExecutionState, call: PreparedCall): Promise<AttemptRecord> {
    const { tool, args } = call;
    if (call.http === undefined || 'error' in call.http) {
      const why = call.http === undefined ? `tool '${tool.name}': channel: is '${tool.channel}', not http` : call.http.error.message;
      return notSent(`could not render the request: ${why}`);
    }
    const rendered = call.http.request;
    let credential: HttpCredentialBuffer | undefined;
    if (tool.credentialRef !== null) {
      try {
        // The one decryption of this attempt, for the URL the binding was checked against.
        credential = await this.vault.httpCredentialBuffer(tool.credentialRef, rendered.url, call.binding);
      } catch (error) {
        return notSent(vaultRefusal(error).reason);
      }
    }
    let result;
    try {
      const traceparent = activeTraceparent();
      result = await this.http.send({ executionId: state.executionId!, tool, arguments: args, rendered, ...(credential ? { credential } : {}), ...(traceparent ? { traceparent } : {}) });
    } finally {
      credential?.value.fill(0);
      for (const secret of credential?.secrets ?? []) secret.fill(0);
    }
    switch (result.kind) {
      case 'unknown':
        return { kind: 'unknown', reason: result.reason };
      case 'not_sent':
        return notSent(result.reason);
      case 'response': {
        const text = isText(result.contentType);
        return {
          kind: 'observed',
          outcome: result.outcome,
          targetStatus: result.status,
          exitCode: null,
          result: {
            status: result.status,
            exitCode: null,
            contentType: result.contentType,
            body: Buffer.from(result.body).toString(text ? 'utf8' : 'base64'),
            encoding: text ? 'utf8' : 'base64',
            truncated: result.truncated,
          },
        };
      }
    }
  }

  /** The contract's status query: does the precondition of the write still hold at the target? */
  protected override async queryStatus(state: ExecutionState): Promise<{ preconditionHolds: boolean; observedStatus: string | null }> {
    const tool = this.tools.get(state.accepted!.toolName);
    const query = tool?.statusQuery;
    if (tool === undefined || query == null) return { preconditionHolds: false, observedStatus: 'no status query in the contract' };
    const args = (await this.argumentsOf(state)) ?? {};
    const statusTool: ToolContract = {
      ...tool,
      request: { kind: 'http', method: 'GET', url: query.http.url, headers: query.http.headers, body: undefined, idempotencyHeader: null },
    };
    const found = await this.credentialFor(statusTool, args, state.executionId!);
    if ('refusal' in found) return { preconditionHolds: false, observedStatus: `not asked: ${found.refusal.reason}`.slice(0, 200) };
    const { credential } = found;
    const result = await this.http.send({
      executionId: state.executionId!,
      tool: statusTool,
      arguments: args,
      ...(credential ? { credential } : {}),
    });
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
