import { isScalar, visit, type Document, type Node, type Scalar, type YAMLMap } from 'yaml';
import { RESERVED_TOOL_NAMES } from '@oncegate/contracts';
import { classFromAnnotations, definitionDigest, type UpstreamToolAnnotations, type UpstreamToolDefinition } from '@oncegate/mcp-upstream';

/**
 * One upstream tool as a contract entry: its Oncegate name, class and correlation window, the `mcp` channel's section,
 * and the comments that `oncegate upstream diff` and `accept` read back (docs/contracts.md, "Upstream MCP servers").
 */

/** A tool as an upstream's `tools/list` gives it: what a contract depends on, and what it shows the agent. */
export interface UpstreamTool extends UpstreamToolDefinition {
  readonly title?: string;
}

/**
 * The classes an upstream tool can have. A conditional write needs a status query and a remote command a marker,
 * neither of which an MCP server offers: recovery after an unknown outcome could not be what those classes promise.
 */
export const UPSTREAM_CLASSES = ['read_only', 'idempotent_write', 'irreversible'] as const;
export type UpstreamClass = (typeof UPSTREAM_CLASSES)[number];

export function isUpstreamClass(value: unknown): value is UpstreamClass {
  return typeof value === 'string' && (UPSTREAM_CLASSES as readonly string[]).includes(value);
}

/**
 * The correlation window an upstream tool gets with its class, as the examples' tools of that class have it: a read
 * matches its retries for 30 s, a write a client may retry for 5 m, and an irreversible call for a day (an agent that
 * comes back the next morning still attaches instead of acting twice).
 */
export const DEFAULT_WINDOWS: Readonly<Record<UpstreamClass, string>> = { read_only: '30s', idempotent_write: '5m', irreversible: '1d' };

/** How an upstream is reached: the `mcp` channel's section without the tool (`UpstreamSection` of @oncegate/mcp-upstream). */
export type UpstreamEndpoint =
  | { readonly url: string }
  | { readonly command: readonly string[]; readonly env?: Readonly<Record<string, string>>; readonly cwd?: string };

/** The most an MCP tool name may hold; longer upstream names are cut. */
const MAX_NAME = 64;

/**
 * The Oncegate name of an upstream tool: `<upstream>_<tool>`, with what an MCP tool name may not hold made `_`, cut to
 * 64 characters, and `_2`, `_3`… added while the name is taken (by `taken`, or by the gateway's own tool).
 */
export function oncegateToolName(upstream: string, tool: string, taken: ReadonlySet<string>): string {
  const base = `${upstream}_${tool}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, MAX_NAME);
  const free = (name: string) => !taken.has(name) && !(RESERVED_TOOL_NAMES as readonly string[]).includes(name);
  if (free(base)) return base;
  for (let n = 2; ; n += 1) {
    const suffix = `_${n}`;
    const name = `${base.slice(0, MAX_NAME - suffix.length)}${suffix}`;
    if (free(name)) return name;
  }
}

/**
 * The comment after a class the operator chose (`--class`, or by hand): `oncegate upstream accept` keeps a class whose
 * comment starts with `override`, and sets the others to what the upstream's annotations give.
 */
export const OVERRIDE_COMMENT = ' override: kept by oncegate upstream accept';

/** Whether a class node carries the operator's override comment. */
export function isOverridden(classNode: Node | null | undefined): boolean {
  return isScalar(classNode) && /^\s*override\b/.test(classNode.comment ?? '');
}

/**
 * The comment after `definition:` that records the annotations the digest was taken over, so that a later diff can
 * show how they changed (the contract keeps the input schema itself, but no annotations: they are derived from `class`).
 */
export function annotationsComment(annotations: UpstreamToolAnnotations | undefined): string {
  return ` annotations: ${JSON.stringify(annotations ?? {})}`;
}

/** The annotations a `definition:` comment recorded; `undefined` when there is none or it does not read. */
export function recordedAnnotations(definitionNode: Node | null | undefined): Record<string, unknown> | undefined {
  if (!isScalar(definitionNode)) return undefined;
  const recorded = /^\s*annotations:\s*(\{.*\})\s*$/.exec(definitionNode.comment ?? '');
  if (recorded === null) return undefined;
  try {
    const value: unknown = JSON.parse(recorded[1]!);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What makes one upstream tool a contract entry. */
export interface UpstreamEntryInput {
  readonly upstream: string;
  readonly endpoint: UpstreamEndpoint;
  /** The vault credential the channel applies (URL upstreams). */
  readonly credentialRef?: string;
  readonly tool: UpstreamTool;
  /** Its Oncegate name (`oncegateToolName`). */
  readonly name: string;
  /** The operator's class, when they chose one (marked as an override, even where the annotations agree); the annotations' otherwise. */
  readonly classOverride?: UpstreamClass;
}

/** Text shown to the agent for a tool whose upstream gives no description (the format requires one). */
function descriptionOf(input: UpstreamEntryInput): string {
  const description = input.tool.description?.trim();
  return description ? input.tool.description! : `The tool '${input.tool.name}' of the upstream MCP server '${input.upstream}' (it gives no description).`;
}

/** The `mcp` channel's section of one tool: how the upstream is reached, the tool's own name and its definition's digest. */
function sectionOf(doc: Document, input: UpstreamEntryInput): YAMLMap {
  const { endpoint, tool } = input;
  const reach = 'url' in endpoint ? { url: endpoint.url } : { command: endpoint.command, ...(endpoint.env ? { env: endpoint.env } : {}), ...(endpoint.cwd ? { cwd: endpoint.cwd } : {}) };
  const section = doc.createNode({ upstream: input.upstream, ...reach, tool: tool.name, definition: definitionDigest(tool) }) as YAMLMap;
  (section.get('definition', true) as Scalar).comment = annotationsComment(tool.annotations);
  return section;
}

/**
 * The contract entry of one upstream tool, as a node of `doc`: the input schema kept as the upstream gives it, the
 * class from its annotations (or the operator's, marked), the window of that class, the `mcp` channel's section.
 */
export function upstreamToolEntry(doc: Document, input: UpstreamEntryInput): YAMLMap {
  const operationClass = input.classOverride ?? (classFromAnnotations(input.tool.annotations) as UpstreamClass);
  const title = input.tool.title?.trim() ? input.tool.title : undefined;
  const entry = doc.createNode({
    name: input.name,
    ...(title === undefined ? {} : { title }),
    description: descriptionOf(input),
    class: operationClass,
    channel: 'mcp',
    target: `mcp/${input.upstream}`,
    ...(input.credentialRef === undefined ? {} : { credential_ref: input.credentialRef }),
    input_schema: input.tool.inputSchema,
    correlation_window: DEFAULT_WINDOWS[operationClass],
  }) as YAMLMap;
  if (input.classOverride !== undefined) (entry.get('class', true) as Scalar).comment = OVERRIDE_COMMENT;
  entry.set('plugin', sectionOf(doc, input));
  compactScalarLists(entry);
  return entry;
}

/** Lists of plain values (`required`, `enum`, `command`) one per line read badly: they are written `[a, b]`. */
export function compactScalarLists(node: Node): void {
  const plain = (item: unknown) => isScalar(item) && !(typeof item.value === 'string' && item.value.includes('\n'));
  visit(node, {
    Seq(_key, seq) {
      if (seq.items.length > 0 && seq.items.every(plain)) seq.flow = true;
    },
  });
}

/** How every file and snippet of these commands is written: no line folded, lists of values as `[a, b]`. */
export const YAML_OUTPUT = { lineWidth: 0, flowCollectionPadding: false } as const;
