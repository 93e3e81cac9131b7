import { dirname, isAbsolute, join, normalize } from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node, type Pair, type YAMLMap, type YAMLSeq } from 'yaml';
import { UpstreamContractError } from './upstream-errors';
import { isOverridden, recordedAnnotations, type UpstreamEndpoint } from './upstream-tool-entry';

/** A tool of a contract file that fronts a tool of an upstream (`channel: mcp`, `plugin.upstream: <name>`), as written. */
export interface WrittenUpstreamTool {
  readonly file: string;
  /** Its place in the file's `tools:`. */
  readonly index: number;
  /** Its Oncegate name. */
  readonly name: string;
  /** The upstream's own name of the tool (`plugin.tool`). */
  readonly upstreamTool: string;
  readonly operationClass: unknown;
  /** Whether its class carries the operator's `# override` comment. */
  readonly classOverridden: boolean;
  readonly correlationWindow: unknown;
  readonly inputSchema: unknown;
  /** The digest of the definition the entry was written against (`plugin.definition`). */
  readonly definition: unknown;
  /** The annotations recorded beside the digest; `undefined` when the file does not say. */
  readonly annotations: Readonly<Record<string, unknown>> | undefined;
  /** The whole `plugin:` section. */
  readonly section: Readonly<Record<string, unknown>>;
  readonly credentialRef: string | undefined;
}

/** One contract file read for `oncegate upstream diff|accept`: its document (with positions) and the upstream's tools in it. */
export interface ContractFileTools {
  readonly file: string;
  readonly text: string;
  readonly doc: Document;
  /** Every tool name of the file (to keep new names unique). */
  readonly names: readonly string[];
  /** The files its `include:` names, resolved against its folder. */
  readonly includes: readonly string[];
  readonly upstreamTools: readonly WrittenUpstreamTool[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value node of `key` in a mapping (the mapping's own pair; aliases are not followed). */
export function pairOf(map: YAMLMap, key: string): Pair<Node, Node | null> | undefined {
  return map.items.find((pair) => isScalar(pair.key) && pair.key.value === key) as Pair<Node, Node | null> | undefined;
}

/**
 * Reads a contract file as `oncegate upstream diff|accept` need it: the tools of `upstream` with the nodes their
 * comments are on. The file need not pass the whole check (a diff is worth reading while a file is being fixed), but
 * it must be YAML with a `tools:` list.
 *
 * @throws UpstreamContractError naming the file, line and column of a YAML mistake, or a file without a `tools:` list
 */
export function readContractFileTools(text: string, file: string, upstream: string): ContractFileTools {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, merge: true, keepSourceTokens: true });
  const [error] = doc.errors;
  if (error !== undefined) {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    throw new UpstreamContractError(`${file}:${line}:${col}: YAML syntax: ${error.message.split('\n')[0]}`, []);
  }
  const tools = doc.get('tools', true);
  if (!isSeq(tools)) throw new UpstreamContractError(`${file}: it has no 'tools:' list; is it a contract file (docs/contracts.md)?`, []);
  const names: string[] = [];
  const upstreamTools: WrittenUpstreamTool[] = [];
  (tools as YAMLSeq<unknown>).items.forEach((item, index) => {
    if (!isMap(item)) return;
    const entry = item.toJS(doc) as Record<string, unknown>;
    if (typeof entry['name'] === 'string') names.push(entry['name']);
    const section = entry['plugin'];
    if (entry['channel'] !== 'mcp' || !isRecord(section) || section['upstream'] !== upstream || typeof section['tool'] !== 'string') return;
    const plugin = pairOf(item, 'plugin')?.value;
    upstreamTools.push({
      file,
      index,
      name: String(entry['name']),
      upstreamTool: section['tool'],
      operationClass: entry['class'],
      classOverridden: isOverridden(pairOf(item, 'class')?.value),
      correlationWindow: entry['correlation_window'],
      inputSchema: entry['input_schema'],
      definition: section['definition'],
      annotations: isMap(plugin) ? recordedAnnotations(pairOf(plugin, 'definition')?.value) : undefined,
      section,
      credentialRef: typeof entry['credential_ref'] === 'string' ? entry['credential_ref'] : undefined,
    });
  });
  const include = doc.toJS()?.['include'];
  const includes = Array.isArray(include) ? include.filter((entry): entry is string => typeof entry === 'string').map((entry) => (isAbsolute(entry) ? normalize(entry) : join(dirname(file), entry))) : [];
  return { file, text, doc, names, includes, upstreamTools };
}

/** How an upstream is reached, as one of its entries says: new entries are written the same way. */
export function endpointOf(entry: WrittenUpstreamTool): UpstreamEndpoint {
  const { url, command, env, cwd } = entry.section as { url?: unknown; command?: unknown; env?: Record<string, string>; cwd?: string };
  if (typeof url === 'string') return { url };
  return { command: Array.isArray(command) ? command.map(String) : [], ...(env ? { env } : {}), ...(cwd ? { cwd } : {}) };
}
