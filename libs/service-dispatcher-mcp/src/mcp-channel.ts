import type { Tool } from '@modelcontextprotocol/client';
import { defineChannel, type ChannelAttempt, type ChannelContext, type ChannelDriver, type ChannelLog, type ResumedTask, type SendOutcome } from '@oncegate/dispatcher-kit';
import { definitionDigest, UPSTREAM_SECTION_SCHEMA, type UpstreamToolDefinition } from '@oncegate/mcp-upstream';
import { storedAnswer } from './call-result';
import { checkMcpSection, mcpSection, transportKey, type McpSection } from './mcp-section';
import { LIST_CHANGED, NotSent, UpstreamSession, type CallContext, type UpstreamAnswer, type ToolChanges } from './upstream-session';

/** Why a tool must not be sent as its contract has it: the upstream no longer lists it, or defines it otherwise now. */
export function heldReason(toolName: string, section: McpSection, live: Tool | undefined): string | undefined {
  const diff = `oncegate upstream diff ${section.upstream}`;
  if (live === undefined) {
    return `upstream ${section.upstream} no longer lists tool ${section.tool}: ${toolName} is held, nothing was sent (${diff})`;
  }
  const digest = definitionDigest(live as unknown as UpstreamToolDefinition);
  if (digest === section.definition) return undefined;
  return (
    `tool ${section.tool} of upstream ${section.upstream} changed since the contract was written (its schema or annotations ` +
    `now read ${digest}, the contract has ${section.definition}): ${toolName} is held, nothing was sent (${diff})`
  );
}

/** An upstream's answer as the attempt's observed outcome: its result, or its error answer. */
function observedOf(answer: UpstreamAnswer): Extract<SendOutcome, { kind: 'observed' }> {
  if (answer.kind === 'error_answer') return { kind: 'observed', outcome: 'failed', body: answer.message, contentType: 'text/plain; charset=utf-8' };
  const { body, contentType } = storedAnswer(answer.result);
  return { kind: 'observed', outcome: answer.result.isError === true ? 'failed' : 'succeeded', body, contentType };
}

/**
 * The MCP channel's driver: one session per upstream (a connection, or a child process it supervises), the tool's
 * live definition compared with the contract's before every call, and each attempt one `tools/call` carrying the
 * execution id and the attempt number in `_meta`.
 */
export class McpChannelDriver implements ChannelDriver {
  private readonly sessions = new Map<string, UpstreamSession>();
  /** The sections of the tools called so far, by tool name: what each refresh of their upstream's tools is checked against. */
  private readonly sections = new Map<string, McpSection>();
  /** The tools held now, with why: a tool is logged when it becomes held or is sent again, not on every call. */
  private readonly held = new Map<string, string>();

  constructor(
    private readonly log: ChannelLog,
    private readonly notice: ChannelContext['notice'] = () => undefined,
  ) {}

  async send(attempt: ChannelAttempt): Promise<SendOutcome> {
    const section = mcpSection(attempt.section);
    const session = this.sessionOf(section);
    this.sections.set(attempt.tool.name, section);
    const context = this.contextOf(attempt);
    let live: Tool | undefined;
    try {
      live = await session.definitionOf(section.tool, context);
    } catch (error) {
      // Nothing was written for this call: no connection, or the upstream's tools could not be read.
      return { kind: 'not_sent', reason: error instanceof NotSent ? error.message : `upstream ${section.upstream} could not be reached: ${(error as Error).message}` };
    }
    const held = this.checkHeld(attempt.tool.name, section, live);
    if (held !== undefined) return { kind: 'not_sent', reason: held };
    const mode = session.taskMode(live!);
    if (typeof mode === 'object') return { kind: 'not_sent', reason: mode.refused };
    const answer = mode === 'task' ? await session.callAsTask(live!, attempt.args, { ...context, recordTask: attempt.recordTask }) : await session.call(live!, attempt.args, context);
    return answer.kind === 'result' || answer.kind === 'error_answer' ? observedOf(answer) : answer;
  }

  /**
   * After an unknown outcome of an attempt the upstream ran as a task: the task's outcome, asked of the upstream by the
   * reference the attempt journaled (on this process's connection to it, whichever process sent the attempt).
   */
  async resumeTask(attempt: ChannelAttempt, task: Readonly<Record<string, unknown>>): Promise<ResumedTask> {
    const section = mcpSection(attempt.section);
    const resumed = await this.sessionOf(section).resumeTask(task, this.contextOf(attempt));
    return resumed.kind === 'result' || resumed.kind === 'error_answer' ? observedOf(resumed) : resumed;
  }

  private contextOf(attempt: ChannelAttempt): CallContext {
    return {
      executionId: attempt.executionId,
      attempt: attempt.attempt,
      connectTimeoutMs: attempt.limits.connectTimeoutMs,
      responseTimeoutMs: attempt.limits.responseTimeoutMs,
      progress: attempt.progress,
      ...(attempt.secret === undefined ? {} : { secret: attempt.secret }),
    };
  }

  /** Held or not, logged when that changes for the tool. */
  private checkHeld(toolName: string, section: McpSection, live: Tool | undefined): string | undefined {
    const reason = heldReason(toolName, section, live);
    const before = this.held.get(toolName);
    if (reason !== undefined && reason !== before) this.log.warn(reason);
    if (reason === undefined && before !== undefined) this.log.log(`${toolName}: tool ${section.tool} of upstream ${section.upstream} matches its contract again; it is sent`);
    if (reason === undefined) this.held.delete(toolName);
    else this.held.set(toolName, reason);
    return reason;
  }

  /**
   * Journals a change of the upstream's tools: when it said so (`tools/list_changed`), and whenever a listing differs
   * from the one before (read again before every call, or on a new connection). A first listing is no change.
   */
  private noticeChanges(upstream: string, tools: ReadonlyMap<string, Tool>, why: string, changes: ToolChanges | undefined): void {
    if (changes === undefined) return;
    const differs = changes.added.length + changes.removed.length + changes.changed.length > 0;
    if (!differs && why !== LIST_CHANGED) return;
    const held = [...this.held.keys()].filter((toolName) => this.sections.get(toolName)?.upstream === upstream).sort();
    const said = [
      ...(changes.changed.length > 0 ? [`changed: ${changes.changed.join(', ')}`] : []),
      ...(changes.added.length > 0 ? [`new: ${changes.added.join(', ')}`] : []),
      ...(changes.removed.length > 0 ? [`gone: ${changes.removed.join(', ')}`] : []),
    ];
    this.notice({
      kind: 'upstream_tools_changed',
      message:
        `upstream ${upstream} lists ${tools.size} tools (${why})${said.length === 0 ? ', none changed' : `; ${said.join('; ')}`}` +
        (held.length === 0 ? '' : `; held: ${held.join(', ')} (oncegate upstream diff ${upstream})`),
      details: { upstream, why, tools: tools.size, ...changes, held },
    });
  }

  /** The session of the section's upstream, opened at first use (one per upstream and transport in this process). */
  private sessionOf(section: McpSection): UpstreamSession {
    const key = `${section.upstream} ${transportKey(section.transport)}`;
    let session = this.sessions.get(key);
    if (session === undefined) {
      const opened = new UpstreamSession(section.upstream, section.transport, this.log);
      // Each refresh of the upstream's tools says which of the tools called so far it holds now.
      opened.onRefresh.push((tools, why, changes) => {
        for (const [toolName, known] of this.sections) {
          if (known.upstream === section.upstream) this.checkHeld(toolName, known, tools.get(known.tool));
        }
        this.noticeChanges(section.upstream, tools, why, changes);
      });
      this.sessions.set(key, opened);
      session = opened;
    }
    return session;
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((session) => session.close()));
    this.sessions.clear();
  }
}

/**
 * The `mcp` channel (docs/dispatchers.md, the MCP channel): an upstream MCP server's tools behind Oncegate, each call
 * with an execution identity. Built on the dispatcher kit's public API alone.
 */
export const mcpKit = defineChannel({
  name: 'mcp',
  // No conditional_write: an upstream has no status query; a call it ran as a task is resumed whatever its class.
  classes: ['read_only', 'idempotent_write', 'irreversible'],
  contract: { schema: UPSTREAM_SECTION_SCHEMA as unknown as Record<string, unknown>, check: checkMcpSection },
  // A url upstream's bearer token, bound to the url's host and port.
  credentialKinds: ['password'],
  open: ({ log, notice }) => new McpChannelDriver(log, notice),
});
